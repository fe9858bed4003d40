package observe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/middleware"
)

// Prometheus keeps the middleware's outcomes and the store's latencies as
// Prometheus series (listed in the package documentation). Its methods are
// safe for concurrent use.
type Prometheus struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	takeovers prometheus.Counter
	store     *prometheus.HistogramVec

	// The series of every outcome and store operation, looked up once at
	// registration rather than hashed from label strings on every call.
	byOutcome map[middleware.Outcome]outcomeSeries
	byOp      map[string][2]prometheus.Observer // [0] ok, [1] error
}

type outcomeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// NewPrometheus registers the series on reg (nil:
// prometheus.DefaultRegisterer), each outcome's and each store operation's
// at 0, so that a rate is defined before the first request. It fails if reg
// already holds a series of the same name.
func NewPrometheus(reg prometheus.Registerer) (*Prometheus, error) {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	p := &Prometheus{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoidem_requests_total",
			Help: "Requests that carried an idempotency key, by outcome.",
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
		}, []string{"op"}),
	}
	p.byOutcome = map[middleware.Outcome]outcomeSeries{}
	for _, o := range middleware.Outcomes() {
		p.byOutcome[o] = outcomeSeries{p.requests.WithLabelValues(o.String()), p.latency.WithLabelValues(o.String())}
	}
	p.byOp = map[string][2]prometheus.Observer{}
	for _, op := range storeOps {
		p.byOp[op] = [2]prometheus.Observer{p.store.WithLabelValues(op + "_ok"), p.store.WithLabelValues(op + "_error")}
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
func (p *Prometheus) Observe(ev middleware.Event) {
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

// ObserveStore records c's latency under op "<op>_ok" or "<op>_error": a
// [Store] callback.
func (p *Prometheus) ObserveStore(c StoreCall) {
	i, result := 0, "_ok"
	if c.Err != nil {
		i, result = 1, "_error"
	}
	if series, ok := p.byOp[c.Op]; ok {
		series[i].Observe(c.Latency.Seconds())
		return
	}
	p.store.WithLabelValues(c.Op + result).Observe(c.Latency.Seconds())
}
