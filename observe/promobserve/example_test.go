package promobserve_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe/promobserve"
)

// ingest stands for the application's handler.
var ingest = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"stored":["f1"]}`)
})

// Serve the middleware's outcomes and the store's latencies on /metrics.
func Example() {
	reg := prometheus.NewRegistry()
	prom, err := promobserve.New(reg)
	if err != nil {
		panic(err)
	}
	idem, err := middleware.New(new(memstore.Store), middleware.Config{Observer: prom.Observe, StoreObserver: prom.ObserveStore})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /features", idem.Handler(ingest))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	for range 2 { // a delivery and the sender's retry
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{"type":"Feature","id":"f1","geometry":null,"properties":null}`))
		r.Header.Set("Idempotency-Key", `"delivery-42"`)
		mux.ServeHTTP(httptest.NewRecorder(), r)
	}

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for sc := bufio.NewScanner(w.Body); sc.Scan(); {
		line := sc.Text()
		counted := strings.HasPrefix(line, "geoidem_requests_total{") && !strings.HasSuffix(line, " 0")
		if counted || strings.HasPrefix(line, `geoidem_store_operation_seconds_count{op="claim",result="ok"}`) {
			fmt.Println(line)
		}
	}
	// Output:
	// geoidem_requests_total{outcome="executed"} 1
	// geoidem_requests_total{outcome="replayed"} 1
	// geoidem_store_operation_seconds_count{op="claim",result="ok"} 2
}

// Feed the Prometheus observer and the application's own from one
// middleware and one store: one callback that calls each.
func Example_severalObservers() {
	prom, err := promobserve.New(prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	count := 0
	idem, err := middleware.New(new(memstore.Store), middleware.Config{
		Observer: func(ev middleware.Event) {
			prom.Observe(ev)
			count++
			fmt.Println("request:", ev.Outcome, ev.Status)
		},
		StoreObserver: func(c middleware.StoreCall) {
			prom.ObserveStore(c)
			if c.Op == middleware.OpClaim {
				fmt.Println("store:", c.Op, c.Err)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	h := idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for range 2 { // a delivery and its retry
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`))
		r.Header.Set("Idempotency-Key", `"delivery-42"`)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	fmt.Println("events:", count)
	// Output:
	// store: claim <nil>
	// request: executed 201
	// store: claim <nil>
	// request: replayed 201
	// events: 2
}
