package observe_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/geoidem/geoidem/examples/observe"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// ingest stands for the application's handler.
var ingest = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"stored":["f1"]}`)
})

// deliver posts the same delivery twice (the sender's retry) to h.
func deliver(ctx context.Context, h http.Handler) {
	for range 2 {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/features",
			strings.NewReader(`{"type":"Feature","id":"f1","geometry":null,"properties":null}`))
		r.Header.Set("Idempotency-Key", `"delivery-42"`)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// Serve the middleware's outcomes and the store's latencies on /metrics.
func ExamplePrometheus() {
	reg := prometheus.NewRegistry()
	prom, err := observe.NewPrometheus(reg)
	if err != nil {
		panic(err)
	}
	store := observe.Store(new(memstore.Store), prom.ObserveStore)
	idem, err := middleware.New(store, middleware.Config{Observer: prom.Observe})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /features", idem.Handler(ingest))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	deliver(context.Background(), mux)

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for sc := bufio.NewScanner(w.Body); sc.Scan(); {
		line := sc.Text()
		counted := strings.HasPrefix(line, "geoidem_requests_total{") && !strings.HasSuffix(line, " 0")
		if counted || strings.HasPrefix(line, `geoidem_store_operation_seconds_count{op="claim_ok"}`) {
			fmt.Println(line)
		}
	}
	// Output:
	// geoidem_requests_total{outcome="executed"} 1
	// geoidem_requests_total{outcome="replayed"} 1
	// geoidem_store_operation_seconds_count{op="claim_ok"} 2
}

// Trace each request's outcome as a child of the request's span. Here the
// OpenTelemetry SDK records the spans; a service sets up its exporters on
// the providers instead.
func ExampleOTel() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel, err := observe.NewOTel(mp, tp)
	if err != nil {
		panic(err)
	}
	store := observe.Store(new(memstore.Store), tel.ObserveStore)
	idem, err := middleware.New(store, middleware.Config{Observer: tel.Observe})
	if err != nil {
		panic(err)
	}

	// The server's span of the request, as an HTTP tracing middleware
	// would start it.
	ctx, request := tp.Tracer("server").Start(context.Background(), "POST /features")
	deliver(ctx, idem.Handler(ingest))
	request.End()

	for _, s := range spans.Ended() {
		if s.Name() != "geoidem.request" {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == observe.AttrOutcome {
				fmt.Println(s.Name(), a.Value.AsString(), "child of the request:", s.Parent().SpanID() == request.SpanContext().SpanID())
			}
		}
	}
	// Output:
	// geoidem.request executed child of the request: true
	// geoidem.request replayed child of the request: true
}

// Feed Prometheus, OpenTelemetry and the application's own observer from
// one middleware.
func ExampleAll() {
	prom, err := observe.NewPrometheus(prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	tel, err := observe.NewOTel(nil, nil) // the global providers of package otel
	if err != nil {
		panic(err)
	}
	mine := func(ev middleware.Event) { fmt.Println(ev.Outcome, ev.Status) }

	store := observe.Store(new(memstore.Store), observe.All(prom.ObserveStore, tel.ObserveStore))
	idem, err := middleware.New(store, middleware.Config{Observer: observe.All(prom.Observe, tel.Observe, mine)})
	if err != nil {
		panic(err)
	}
	deliver(context.Background(), idem.Handler(ingest))
	// Output:
	// executed 201
	// replayed 201
}
