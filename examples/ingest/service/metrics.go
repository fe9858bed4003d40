package service

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves reg in the Prometheus text format: the
// middleware's outcomes and the key store's latencies
// (observe/promobserve), the features written (geoidem_features_total),
// and the front door's decisions (promobserve.FrontDoor).
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
