package ingest

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe/promobserve"
)

// metrics is what GET /metrics serves, from a registry of the service's
// own: the middleware's outcomes and the key store's latencies
// (promobserve.Observer) and the handler's runs (runCounter).
type metrics struct {
	reg  *prometheus.Registry
	prom *promobserve.Observer
}

func newMetrics() (*metrics, error) {
	reg := prometheus.NewRegistry()
	prom, err := promobserve.New(reg)
	if err != nil {
		return nil, err
	}
	return &metrics{reg: reg, prom: prom}, nil
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// outcomes reads geoidem_requests_total back, by outcome.
func (m *metrics) outcomes() map[middleware.Outcome]int {
	byName := map[string]middleware.Outcome{}
	out := map[middleware.Outcome]int{}
	for _, o := range middleware.Outcomes() {
		byName[o.String()] = o
		out[o] = 0
	}
	families, _ := m.reg.Gather() // an error leaves the families it could gather
	for _, f := range families {
		if f.GetName() != "geoidem_requests_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if o, ok := byName[l.GetValue()]; ok && l.GetName() == "outcome" {
					out[o] = int(s.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}
