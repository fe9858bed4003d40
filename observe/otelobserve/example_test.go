package otelobserve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe/otelobserve"
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

// Trace each request's outcome as a child of the request's span. Here the
// OpenTelemetry SDK records the spans; a service sets up its exporters on
// the providers instead.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel, err := otelobserve.New(mp, tp)
	if err != nil {
		panic(err)
	}
	idem, err := middleware.New(new(memstore.Store), middleware.Config{Observer: tel.Observe, StoreObserver: tel.ObserveStore})
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
			if a.Key == otelobserve.AttrOutcome {
				fmt.Println(s.Name(), a.Value.AsString(), "child of the request:", s.Parent().SpanID() == request.SpanContext().SpanID())
			}
		}
	}
	// Output:
	// geoidem.request executed child of the request: true
	// geoidem.request replayed child of the request: true
}

// Feed the OpenTelemetry observer and the application's own from one
// middleware and one store: one callback that calls each.
func Example_severalObservers() {
	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel, err := otelobserve.New(mp, tp)
	if err != nil {
		panic(err)
	}
	count := 0
	idem, err := middleware.New(new(memstore.Store), middleware.Config{
		Observer: func(ev middleware.Event) {
			tel.Observe(ev)
			count++
			fmt.Println("request:", ev.Outcome, ev.Status)
		},
		StoreObserver: func(c middleware.StoreCall) {
			tel.ObserveStore(c)
			if c.Op == middleware.OpClaim {
				fmt.Println("store:", c.Op, c.Err)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	deliver(context.Background(), idem.Handler(ingest))
	fmt.Println("events:", count)
	// Output:
	// store: claim <nil>
	// request: executed 201
	// store: claim <nil>
	// request: replayed 201
	// events: 2
}
