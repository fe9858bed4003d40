package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/middleware"
)

// metrics are the proxy's series, served on GET /metrics in the
// Prometheus text format: the middleware's outcomes and the key store's
// latencies under the names observe/promobserve gives them (so that
// dashboards built for examples/ingest read the proxy too), and the
// upstream's. Written with the standard library only: the command is in
// the library's module, which requires no metrics client.
//
//	geoidem_requests_total{outcome}                 counter, by middleware.Outcome
//	geoidem_request_duration_seconds{outcome}       histogram of middleware.Event.Latency
//	geoidem_lease_takeovers_total                   counter
//	geoidem_store_operation_seconds{op,result}      histogram of middleware.StoreCall.Latency
//	geoidem_upstream_requests_total{result}         counter: answered, unreachable (not sent,
//	                                                key released), uncertain (sent, no answer
//	                                                to trust, key held)
//	geoidem_upstream_duration_seconds{result}       histogram of the upstream call's time
//	geoidem_upstream_uncertain_held_total           counter: uncertain keys held (recorded as such)
//	geoidem_upstream_uncertain_unrecorded_total     counter: uncertain keys the store would not hold
//	                                                (held only until their lease runs out)
//	geoidem_frontdoor_…                             the front door's decisions and state, as
//	                                                frontdoor.Stats.Series names them (and
//	                                                examples/ingest's /metrics, through
//	                                                promobserve.FrontDoor)
type metrics struct {
	// The maps are filled once, by newMetrics, and only read after:
	// each series updates atomically.
	requests  map[string]*counter
	durations map[string]*histogram
	takeovers counter
	store     map[[2]string]*histogram

	upstream         map[string]*counter
	upstreamDuration map[string]*histogram
	held, unrecorded counter

	door *frontdoor.Door // set once, before the first request
}

// The upstream call's results (geoidem_upstream_requests_total).
const (
	resultAnswered    = "answered"
	resultUnreachable = "unreachable"
	resultUncertain   = "uncertain"
)

var (
	requestBuckets = exponential(0.0005, 2, 16)
	storeBuckets   = exponential(0.0001, 2, 16)
)

func newMetrics() *metrics {
	m := &metrics{
		requests: map[string]*counter{}, durations: map[string]*histogram{},
		store:    map[[2]string]*histogram{},
		upstream: map[string]*counter{}, upstreamDuration: map[string]*histogram{},
	}
	for _, o := range append(outcomeNames(), "other") {
		m.requests[o] = new(counter)
		m.durations[o] = newHistogram(requestBuckets)
	}
	for _, op := range middleware.StoreOps() {
		for _, r := range []string{"ok", "error"} {
			m.store[[2]string{string(op), r}] = newHistogram(storeBuckets)
		}
	}
	for _, r := range []string{resultAnswered, resultUnreachable, resultUncertain} {
		m.upstream[r] = new(counter)
		m.upstreamDuration[r] = newHistogram(requestBuckets)
	}
	return m
}

// observe is a middleware.Config.Observer.
func (m *metrics) observe(ev middleware.Event) {
	o := ev.Outcome.String()
	c, h := m.requests[o], m.durations[o]
	if c == nil { // an outcome newer than middleware.Outcomes lists
		c, h = m.requests["other"], m.durations["other"]
	}
	c.add()
	h.observe(ev.Latency)
	if ev.TookOver {
		m.takeovers.add()
	}
}

// observeStore is a middleware.Config.StoreObserver.
func (m *metrics) observeStore(c middleware.StoreCall) {
	result := "ok"
	if c.Err != nil {
		result = "error"
	}
	if h := m.store[[2]string{string(c.Op), result}]; h != nil {
		h.observe(c.Latency)
	}
}

// upstreamCall counts one call of the upstream.
func (m *metrics) upstreamCall(result string, d time.Duration) {
	m.upstream[result].add()
	m.upstreamDuration[result].observe(d)
}

func outcomeNames() []string {
	var names []string
	for _, o := range middleware.Outcomes() {
		names = append(names, o.String())
	}
	return names
}

func (m *metrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.write(w)
	})
}

// write writes every series in the Prometheus text format.
func (m *metrics) write(w io.Writer) {
	requests, durations := m.requests, m.durations
	var b strings.Builder
	header(&b, "geoidem_requests_total", "counter", "Requests the middleware handled, by outcome (rejected ones, without a key or with a malformed one, included).")
	for _, o := range sortedKeys(requests) {
		fmt.Fprintf(&b, "geoidem_requests_total{outcome=%q} %d\n", o, requests[o].load())
	}
	header(&b, "geoidem_request_duration_seconds", "histogram", "Time from receiving a request to settling its outcome.")
	for _, o := range sortedKeys(durations) {
		durations[o].write(&b, "geoidem_request_duration_seconds", fmt.Sprintf("outcome=%q", o))
	}
	header(&b, "geoidem_lease_takeovers_total", "counter", "Keys acquired by taking over the expired lease of an earlier request.")
	fmt.Fprintf(&b, "geoidem_lease_takeovers_total %d\n", m.takeovers.load())
	header(&b, "geoidem_store_operation_seconds", "histogram", "Latency of key store operations, by operation and result.")
	ops := make([][2]string, 0, len(m.store))
	for k := range m.store {
		ops = append(ops, k)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i][0] < ops[j][0] || ops[i][0] == ops[j][0] && ops[i][1] < ops[j][1] })
	for _, k := range ops {
		m.store[k].write(&b, "geoidem_store_operation_seconds", fmt.Sprintf("op=%q,result=%q", k[0], k[1]))
	}
	header(&b, "geoidem_upstream_requests_total", "counter", "Requests forwarded to the upstream, by result: answered; unreachable (nothing sent, the key released); uncertain (sent, and no answer to trust: the key held).")
	for _, r := range sortedKeys(m.upstream) {
		fmt.Fprintf(&b, "geoidem_upstream_requests_total{result=%q} %d\n", r, m.upstream[r].load())
	}
	header(&b, "geoidem_upstream_duration_seconds", "histogram", "Time of the upstream call, by result.")
	for _, r := range sortedKeys(m.upstreamDuration) {
		m.upstreamDuration[r].write(&b, "geoidem_upstream_duration_seconds", fmt.Sprintf("result=%q", r))
	}
	header(&b, "geoidem_upstream_uncertain_held_total", "counter", "Keys whose upstream outcome is unknown, held and recorded as uncertain until an operator releases them or the hold ends.")
	fmt.Fprintf(&b, "geoidem_upstream_uncertain_held_total %d\n", m.held.load())
	header(&b, "geoidem_upstream_uncertain_unrecorded_total", "counter", "Keys whose upstream outcome is unknown that the store would not record as such: held only until their lease runs out.")
	fmt.Fprintf(&b, "geoidem_upstream_uncertain_unrecorded_total %d\n", m.unrecorded.load())
	if m.door != nil {
		writeSeries(&b, m.door.Stats())
	}
	_, _ = io.WriteString(w, b.String())
}

// writeSeries writes st's series, grouped by name as frontdoor.Stats.Series
// gives them, each name's help and type once.
func writeSeries(b *strings.Builder, st frontdoor.Stats) {
	last := ""
	st.Series(func(name, help string, counter bool, label, value string, n float64) {
		if name != last {
			typ := "gauge"
			if counter {
				typ = "counter"
			}
			header(b, name, typ, help)
			last = name
		}
		b.WriteString(name)
		if label != "" {
			fmt.Fprintf(b, "{%s=%q}", label, value)
		}
		fmt.Fprintf(b, " %s\n", strconv.FormatFloat(n, 'g', -1, 64))
	})
}

func header(b *strings.Builder, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func sortedKeys[V any](mp map[string]V) []string {
	ks := make([]string, 0, len(mp))
	for k := range mp {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

type counter struct{ n atomic.Uint64 }

func (c *counter) add()         { c.n.Add(1) }
func (c *counter) load() uint64 { return c.n.Load() }

// histogram is a Prometheus histogram of durations, in seconds.
type histogram struct {
	bounds []float64       // upper bounds, ascending
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	v := d.Seconds()
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (h *histogram) write(b *strings.Builder, name, labels string) {
	var cum uint64
	for i, le := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(b, "%s_bucket{%s,le=%q} %d\n", name, labels, strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(b, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, labels, cum)
	fmt.Fprintf(b, "%s_sum{%s} %s\n", name, labels, strconv.FormatFloat(math.Float64frombits(h.sum.Load()), 'g', -1, 64))
	fmt.Fprintf(b, "%s_count{%s} %d\n", name, labels, cum)
}

func exponential(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}
