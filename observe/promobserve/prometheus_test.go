package promobserve_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe/promobserve"
)

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	w := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", w.Code, w.Body)
	}
	return w.Body.String()
}

func wantLines(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, "\n"+l+"\n") {
			t.Errorf("/metrics lacks %q", l)
		}
	}
}

// TestPrometheusSeries: every outcome's series is there from the start, and
// a delivery and its retry are counted with their store calls.
func TestPrometheusSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	prom, err := promobserve.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	var zero []string
	for _, o := range middleware.Outcomes() {
		zero = append(zero, `geoidem_requests_total{outcome="`+o.String()+`"} 0`,
			`geoidem_request_duration_seconds_count{outcome="`+o.String()+`"} 0`)
	}
	for _, op := range []string{"claim", "extend", "complete", "release"} {
		zero = append(zero, `geoidem_store_operation_seconds_count{op="`+op+`",result="ok"} 0`,
			`geoidem_store_operation_seconds_count{op="`+op+`",result="error"} 0`)
	}
	wantLines(t, scrape(t, reg), append(zero, "geoidem_lease_takeovers_total 0")...)

	idem, err := middleware.New(new(memstore.Store), middleware.Config{Observer: prom.Observe, StoreObserver: prom.ObserveStore})
	if err != nil {
		t.Fatal(err)
	}
	h := idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for _, key := range []string{`"k1"`, `"k1"`, ``} {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`))
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	wantLines(t, scrape(t, reg),
		`geoidem_requests_total{outcome="executed"} 1`,
		`geoidem_requests_total{outcome="replayed"} 1`,
		`geoidem_requests_total{outcome="rejected"} 1`,
		`geoidem_requests_total{outcome="in_flight"} 0`,
		`geoidem_request_duration_seconds_count{outcome="executed"} 1`,
		`geoidem_store_operation_seconds_count{op="claim",result="ok"} 2`,
		`geoidem_store_operation_seconds_count{op="complete",result="ok"} 1`,
		`geoidem_store_operation_seconds_count{op="release",result="ok"} 0`,
		`geoidem_lease_takeovers_total 0`,
	)

	prom.Observe(middleware.Event{Outcome: middleware.Executed, TookOver: true})
	wantLines(t, scrape(t, reg), `geoidem_lease_takeovers_total 1`, `geoidem_requests_total{outcome="executed"} 2`)
}

// TestPrometheusRegistersOnce: a second registration on the same registry
// fails, and leaves the first one's series as they were.
func TestPrometheusRegistersOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	prom, err := promobserve.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	prom.Observe(middleware.Event{Outcome: middleware.Replayed})
	if _, err := promobserve.New(reg); err == nil {
		t.Fatal("second New on one registry: no error")
	}
	wantLines(t, scrape(t, reg), `geoidem_requests_total{outcome="replayed"} 1`)
}
