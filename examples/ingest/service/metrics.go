package service

import (
	"net/http"

	"github.com/geoidem/geoidem/frontdoor"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves reg in the Prometheus text format: the
// middleware's outcomes and the key store's latencies
// (observe/promobserve), the features written (geoidem_features_total),
// and the front door's connections (connsCollector).
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// connsCollector exports a frontdoor.Conns: the connections it refused or
// closed, by reason, and those open, idle, held and waiting for room.
type connsCollector struct{ conns *frontdoor.Conns }

var (
	connsClosedDesc = prometheus.NewDesc("geoidem_frontdoor_connections_closed_total",
		"Connections the front door refused at accept or closed, by reason: host (refused under contention, its host holding -max-conns-per-host or more), idle (closed to make room under contention), busy (closed to make room under contention, its request's body still arriving), idle_bound (closed to keep to -max-idle-conns).",
		[]string{"reason"}, nil)
	connsWaitedDesc = prometheus.NewDesc("geoidem_frontdoor_connections_waited_total",
		"New connections that waited for room at -max-conns, none being closable for them.", nil, nil)
	connsDesc = prometheus.NewDesc("geoidem_frontdoor_connections",
		"Connections by state: open, idle (waiting for a request), held (a request with its body whole), waiting (accepted, waiting for room).",
		[]string{"state"}, nil)
)

func (connsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- connsClosedDesc
	ch <- connsWaitedDesc
	ch <- connsDesc
}

func (c connsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.conns.Stats()
	for reason, n := range map[string]uint64{"host": s.Refused, "idle": s.ClosedIdle, "busy": s.ClosedBusy, "idle_bound": s.Evicted} {
		ch <- prometheus.MustNewConstMetric(connsClosedDesc, prometheus.CounterValue, float64(n), reason)
	}
	ch <- prometheus.MustNewConstMetric(connsWaitedDesc, prometheus.CounterValue, float64(s.Waited))
	for state, n := range map[string]int{"open": s.Open, "idle": s.Idle, "held": s.Held, "waiting": s.Waiting} {
		ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(n), state)
	}
}
