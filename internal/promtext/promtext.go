// Package promtext keeps counters and histograms and writes them in the
// Prometheus text exposition format (version 0.0.4). It covers what the
// example services expose, without the dependency tree of the full client.
package promtext

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Registry holds metrics in registration order and serves them.
type Registry struct {
	mu      sync.Mutex
	metrics []metric
}

type metric interface {
	write(w io.Writer)
}

// ServeHTTP writes every metric in the text format.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	r.WriteText(w)
}

// WriteText writes every metric in the text format.
func (r *Registry) WriteText(w io.Writer) {
	r.mu.Lock()
	ms := slices.Clone(r.metrics)
	r.mu.Unlock()
	for _, m := range ms {
		m.write(w)
	}
}

func (r *Registry) add(m metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics = append(r.metrics, m)
}

// CounterVec is a family of counters told apart by the value of one label.
type CounterVec struct {
	name, help, label string
	mu                sync.Mutex
	values            map[string]float64
	order             []string
}

// NewCounterVec registers a counter family; label "" makes a single counter.
func (r *Registry) NewCounterVec(name, help, label string) *CounterVec {
	c := &CounterVec{name: name, help: help, label: label, values: map[string]float64{}}
	r.add(c)
	return c
}

// Add adds v to the counter with the given label value, creating it at 0.
func (c *CounterVec) Add(labelValue string, v float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.values[labelValue]; !ok {
		c.order = append(c.order, labelValue)
	}
	c.values[labelValue] += v
}

// Value returns the counter's current value.
func (c *CounterVec) Value(labelValue string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.values[labelValue]
}

func (c *CounterVec) write(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", c.name, escapeHelp(c.help), c.name)
	for _, lv := range c.order {
		fmt.Fprintf(w, "%s%s %s\n", c.name, labels(c.label, lv, "", ""), formatFloat(c.values[lv]))
	}
}

// HistogramVec is a family of histograms told apart by one label.
type HistogramVec struct {
	name, help, label string
	bounds            []float64
	mu                sync.Mutex
	series            map[string]*histogram
	order             []string
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

// NewHistogramVec registers a histogram family with the given upper bounds,
// which must increase.
func (r *Registry) NewHistogramVec(name, help, label string, bounds []float64) *HistogramVec {
	h := &HistogramVec{name: name, help: help, label: label, bounds: slices.Clone(bounds), series: map[string]*histogram{}}
	r.add(h)
	return h
}

// ExponentialBuckets returns n bounds start, start·factor, start·factor², …
func ExponentialBuckets(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start * math.Pow(factor, float64(i))
	}
	return b
}

// Observe records v in the histogram with the given label value.
func (h *HistogramVec) Observe(labelValue string, v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.series[labelValue]
	if !ok {
		s = &histogram{counts: make([]uint64, len(h.bounds)+1)}
		h.series[labelValue] = s
		h.order = append(h.order, labelValue)
	}
	i, _ := slices.BinarySearch(h.bounds, v) // first bound ≥ v: buckets are le
	s.counts[i]++
	s.sum += v
	s.count++
}

// Count returns the number of observations with the given label value.
func (h *HistogramVec) Count(labelValue string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.series[labelValue]; ok {
		return s.count
	}
	return 0
}

func (h *HistogramVec) write(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", h.name, escapeHelp(h.help), h.name)
	for _, lv := range h.order {
		s := h.series[lv]
		var cum uint64
		for i, b := range h.bounds {
			cum += s.counts[i]
			fmt.Fprintf(w, "%s_bucket%s %d\n", h.name, labels(h.label, lv, "le", formatFloat(b)), cum)
		}
		fmt.Fprintf(w, "%s_bucket%s %d\n", h.name, labels(h.label, lv, "le", "+Inf"), s.count)
		fmt.Fprintf(w, "%s_sum%s %s\n", h.name, labels(h.label, lv, "", ""), formatFloat(s.sum))
		fmt.Fprintf(w, "%s_count%s %d\n", h.name, labels(h.label, lv, "", ""), s.count)
	}
}

func labels(k1, v1, k2, v2 string) string {
	var parts []string
	if k1 != "" {
		parts = append(parts, k1+`="`+escapeLabel(v1)+`"`)
	}
	if k2 != "" {
		parts = append(parts, k2+`="`+escapeLabel(v2)+`"`)
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
