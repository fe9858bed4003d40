package ingest

import (
	"github.com/geoidem/geoidem/internal/promtext"
	"github.com/geoidem/geoidem/middleware"
)

// metrics turns the middleware's observer events into Prometheus series.
type metrics struct {
	outcomes  *promtext.CounterVec
	latency   *promtext.HistogramVec
	takeovers *promtext.CounterVec
}

func newMetrics(reg *promtext.Registry) *metrics {
	m := &metrics{
		outcomes: reg.NewCounterVec("geoidem_requests_total",
			"Requests that carried an idempotency key, by outcome.", "outcome"),
		latency: reg.NewHistogramVec("geoidem_request_duration_seconds",
			"Time from receiving a request to settling its outcome.", "outcome", promtext.ExponentialBuckets(0.0005, 2, 16)),
		takeovers: reg.NewCounterVec("geoidem_lease_takeovers_total",
			"Keys acquired by taking over the expired lease of an earlier request.", ""),
	}
	for _, o := range middleware.Outcomes() { // every series exists from the start
		m.outcomes.Add(o.String(), 0)
	}
	m.takeovers.Add("", 0)
	return m
}

func (m *metrics) observe(ev middleware.Event) {
	o := ev.Outcome.String()
	m.outcomes.Add(o, 1)
	m.latency.Observe(o, ev.Latency.Seconds())
	if ev.TookOver {
		m.takeovers.Add("", 1)
	}
}
