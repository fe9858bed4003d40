// Package promobserve keeps the geoidem middleware's outcomes and the key
// store's latencies as Prometheus series. It is a module of its own, which
// requires only the geoidem library and the Prometheus client, so that an
// application that exports Prometheus metrics inherits nothing of
// OpenTelemetry (see package otelobserve for that).
//
//	prom, err := promobserve.New(registry)
//	…
//	idem, err := middleware.New(store, middleware.Config{Observer: prom.Observe, StoreObserver: prom.ObserveStore})
//
// For pgstore, whose InTx and CompleteTx complete keys in the handler's
// transaction, without the middleware, set pgstore.Config.Observer to
// prom.ObserveStore as well.
//
// # Several observers
//
// middleware.Config.Observer receives a middleware.Event per request the
// middleware handles (every request of a covered method, those refused
// without a key included), and middleware.Config.StoreObserver a
// middleware.StoreCall per Claim, Extend, Complete and Release it makes: the
// middleware observes its own calls, so nothing wraps the store, and the
// store keeps every capability it has. Each takes one callback; to feed
// several (this observer, package otelobserve's, and an application's
// own), call each in turn from one, which must be fast and safe for
// concurrent use:
//
//	idem, err := middleware.New(store, middleware.Config{
//		Observer:      func(ev middleware.Event) { prom.Observe(ev); mine.Observe(ev) },
//		StoreObserver: func(c middleware.StoreCall) { prom.ObserveStore(c); mine.ObserveStore(c) },
//	})
//
// The middleware's own debug log (Config.Logger at slog.LevelDebug) has a
// record per outcome, logged with the request's context, so a handler that
// adds the trace id to records correlates them with the request's trace.
//
// # Series
//
// All present (at 0) from registration on:
//
//	geoidem_requests_total{outcome}                 counter, by middleware.Outcome
//	geoidem_request_duration_seconds{outcome}       histogram of Event.Latency
//	geoidem_lease_takeovers_total                   counter of Event.TookOver
//	geoidem_store_operation_seconds{op,result}      histogram of middleware.StoreCall.Latency; op "claim", "extend", "complete", "release"; result "ok" or "error"
//
// A service's front door (frontdoor.Door) is exported apart, by
// [FrontDoor]: its connections refused or closed, bodies cut off,
// refusals and slots held, as geoidem_frontdoor_* series
// (frontdoor.Stats.Series lists them).
package promobserve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/middleware"
)

// Observer keeps the middleware's outcomes and the store's latencies as
// Prometheus series (listed in the package documentation). Its methods are
// safe for concurrent use.
type Observer struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	takeovers prometheus.Counter
	store     *prometheus.HistogramVec

	// The series of every outcome and store operation, looked up once at
	// registration rather than hashed from label strings on every call.
	byOutcome map[middleware.Outcome]outcomeSeries
	byOp      map[middleware.StoreOp][2]prometheus.Observer // [0] ok, [1] error
}

type outcomeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// New registers the series on reg (nil:
// prometheus.DefaultRegisterer), each outcome's and each store operation's
// at 0, so that a rate is defined before the first request. It fails if reg
// already holds a series of the same name.
func New(reg prometheus.Registerer) (*Observer, error) {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	p := &Observer{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoidem_requests_total",
			Help: "Requests the middleware handled, by outcome (rejected ones, without a key or with a malformed one, included).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "geoidem_request_duration_seconds",
			Help:    "Time from receiving a request to settling its outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"outcome"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoidem_lease_takeovers_total",
			Help: "Keys acquired by taking over the expired lease of an earlier request.",
		}),
		store: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "geoidem_store_operation_seconds",
			Help:    "Latency of key store operations, by operation and result.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"op", "result"}),
	}
	p.byOutcome = map[middleware.Outcome]outcomeSeries{}
	for _, o := range middleware.Outcomes() {
		p.byOutcome[o] = outcomeSeries{p.requests.WithLabelValues(o.String()), p.latency.WithLabelValues(o.String())}
	}
	p.byOp = map[middleware.StoreOp][2]prometheus.Observer{}
	for _, op := range middleware.StoreOps() {
		p.byOp[op] = [2]prometheus.Observer{p.store.WithLabelValues(string(op), "ok"), p.store.WithLabelValues(string(op), "error")}
	}
	var registered []prometheus.Collector
	for _, c := range []prometheus.Collector{p.requests, p.latency, p.takeovers, p.store} {
		if err := reg.Register(c); err != nil {
			// Unregister only what this call registered: unregistering
			// the collector that failed would remove the series already
			// registered under its name.
			for _, r := range registered {
				reg.Unregister(r)
			}
			return nil, err
		}
		registered = append(registered, c)
	}
	return p, nil
}

// Observe counts ev and its latency under its outcome, and a lease
// takeover if it took one over: a middleware.Config.Observer.
func (p *Observer) Observe(ev middleware.Event) {
	series, ok := p.byOutcome[ev.Outcome]
	if !ok {
		o := ev.Outcome.String()
		series = outcomeSeries{p.requests.WithLabelValues(o), p.latency.WithLabelValues(o)}
	}
	series.requests.Inc()
	series.latency.Observe(ev.Latency.Seconds())
	if ev.TookOver {
		p.takeovers.Inc()
	}
}

// ObserveStore records c's latency under its op and result ("ok" or
// "error"): a middleware.Config.StoreObserver, and a pgstore.Config.Observer.
func (p *Observer) ObserveStore(c middleware.StoreCall) {
	i, result := 0, "ok"
	if c.Err != nil {
		i, result = 1, "error"
	}
	if series, ok := p.byOp[c.Op]; ok {
		series[i].Observe(c.Latency.Seconds())
		return
	}
	p.store.WithLabelValues(string(c.Op), result).Observe(c.Latency.Seconds())
}
