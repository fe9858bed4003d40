package otelobserve_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe/otelobserve"
)

// otelKit is an OTel on the SDK, with a span recorder and a manual reader.
type otelKit struct {
	tel    *otelobserve.Observer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
}

func newOTelKit(t *testing.T) *otelKit {
	t.Helper()
	k := &otelKit{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	k.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(k.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(k.reader))
	tel, err := otelobserve.New(mp, k.tp)
	if err != nil {
		t.Fatal(err)
	}
	k.tel = tel
	return k
}

// metrics collects the metrics by name.
func (k *otelKit) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := k.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sums returns a counter's values by the value of key ("" for none).
func sums(t *testing.T, data metricdata.Aggregation, key attribute.Key) map[string]int64 {
	t.Helper()
	sum, ok := data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%T is not an int64 sum", data)
	}
	out := map[string]int64{}
	for _, dp := range sum.DataPoints {
		v, _ := dp.Attributes.Value(key)
		out[v.String()] += dp.Value
	}
	return out
}

// counts returns a histogram's counts by the joined values of keys.
func counts(t *testing.T, data metricdata.Aggregation, keys ...attribute.Key) map[string]uint64 {
	t.Helper()
	h, ok := data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%T is not a float64 histogram", data)
	}
	out := map[string]uint64{}
	for _, dp := range h.DataPoints {
		var vs []string
		for _, k := range keys {
			v, _ := dp.Attributes.Value(k)
			vs = append(vs, v.String())
		}
		out[strings.Join(vs, " ")] += dp.Count
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	out := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value.String()
	}
	return out
}

// TestOTelSpanPerOutcome: each event becomes one span, a child of the
// request's span, spanning the event's latency, with the outcome, status
// and takeover as attributes and an error status where the service failed.
func TestOTelSpanPerOutcome(t *testing.T) {
	k := newOTelKit(t)
	ctx, parent := k.tp.Tracer("server").Start(context.Background(), "POST /features")
	defer parent.End()
	storeErr := errors.New("dial tcp: connection refused")
	for _, c := range []struct {
		ev        middleware.Event
		wantError bool
	}{
		{middleware.Event{Outcome: middleware.Executed, Key: "h1", Status: 201, Latency: 30 * time.Millisecond}, false},
		{middleware.Event{Outcome: middleware.Replayed, Key: "h1", Status: 201, Latency: time.Millisecond}, false},
		{middleware.Event{Outcome: middleware.Executed, Key: "h2", Status: 201, Latency: 2 * time.Second, TookOver: true}, false},
		{middleware.Event{Outcome: middleware.Invalid, Key: "h3", Status: 422, Err: errors.New("bad geometry")}, false},
		{middleware.Event{Outcome: middleware.Rejected, Status: 400}, false},
		{middleware.Event{Outcome: middleware.Released, Key: "h4", Status: 503}, false},
		{middleware.Event{Outcome: middleware.StoreError, Key: "h5", Status: 503, Err: storeErr}, true},
		{middleware.Event{Outcome: middleware.LeaseLost, Key: "h6", Status: 201, Err: keystore.ErrLeaseLost}, true},
		{middleware.Event{Outcome: middleware.Released, Key: "h7", Status: 500, Err: middleware.ErrHandlerPanicked}, true},
	} {
		name := fmt.Sprintf("%s/%d/%v", c.ev.Outcome, c.ev.Status, c.ev.Err)
		k.spans.Reset()
		c.ev.Context = ctx
		k.tel.Observe(c.ev)
		ended := k.spans.Ended()
		if len(ended) != 1 {
			t.Fatalf("%s: %d spans, want 1", name, len(ended))
		}
		s := ended[0]
		if s.Name() != "geoidem.request" {
			t.Errorf("%s: span %q", name, s.Name())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("%s: span's parent %v in trace %v, want the request's span %v in %v", name,
				s.Parent().SpanID(), s.SpanContext().TraceID(), parent.SpanContext().SpanID(), parent.SpanContext().TraceID())
		}
		if d := s.EndTime().Sub(s.StartTime()); d != c.ev.Latency {
			t.Errorf("%s: span lasts %v, want the event's latency %v", name, d, c.ev.Latency)
		}
		a := attrs(s)
		want := map[attribute.Key]string{
			otelobserve.AttrOutcome:  c.ev.Outcome.String(),
			otelobserve.AttrStatus:   fmt.Sprint(c.ev.Status),
			otelobserve.AttrTookOver: fmt.Sprint(c.ev.TookOver),
		}
		if c.ev.Key != "" {
			want[otelobserve.AttrKey] = c.ev.Key
		}
		for key, v := range want {
			if a[key] != v {
				t.Errorf("%s: attribute %s = %q, want %q", name, key, a[key], v)
			}
		}
		if len(a) != len(want) {
			t.Errorf("%s: attributes %v, want %v", name, a, want)
		}
		if got := s.Status().Code == codes.Error; got != c.wantError {
			t.Errorf("%s: status %v, want error: %v", name, s.Status(), c.wantError)
		}
		if c.wantError && c.ev.Err != nil && (s.Status().Description != c.ev.Err.Error() || len(s.Events()) != 1) {
			t.Errorf("%s: status %q and %d events, want %q and the error recorded", name, s.Status().Description, len(s.Events()), c.ev.Err)
		}
	}

	m := k.metrics(t)
	requests := sums(t, m["geoidem.requests"], otelobserve.AttrOutcome)
	for _, o := range middleware.Outcomes() {
		if _, ok := requests[o.String()]; !ok {
			t.Errorf("geoidem.requests has no %s series", o)
		}
	}
	for o, n := range map[string]int64{"executed": 2, "replayed": 1, "invalid": 1, "rejected": 1, "released": 2, "store_error": 1, "lease_lost": 1, "in_flight": 0} {
		if requests[o] != n {
			t.Errorf("geoidem.requests{%s} = %d, want %d", o, requests[o], n)
		}
	}
	if got := sums(t, m["geoidem.lease.takeovers"], "")[""]; got != 1 {
		t.Errorf("geoidem.lease.takeovers = %d, want 1", got)
	}
	if got := counts(t, m["geoidem.request.duration"], otelobserve.AttrOutcome)["executed"]; got != 2 {
		t.Errorf("geoidem.request.duration{executed} count = %d, want 2", got)
	}
}

// TestOTelThroughMiddleware: wired to the middleware and the store, a
// delivery and its retry make two spans under their requests' spans, and
// the store's calls are measured.
func TestOTelThroughMiddleware(t *testing.T) {
	k := newOTelKit(t)
	idem, err := middleware.New(new(memstore.Store), middleware.Config{Observer: k.tel.Observe, StoreObserver: k.tel.ObserveStore})
	if err != nil {
		t.Fatal(err)
	}
	h := idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for i, want := range []string{"executed", "replayed"} {
		ctx, parent := k.tp.Tracer("server").Start(context.Background(), "POST /features")
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/features", strings.NewReader(`{}`))
		r.Header.Set("Idempotency-Key", `"k1"`)
		h.ServeHTTP(httptest.NewRecorder(), r)
		parent.End()
		var got []sdktrace.ReadOnlySpan
		for _, s := range k.spans.Ended() {
			if s.Name() == "geoidem.request" {
				got = append(got, s)
			}
		}
		if len(got) != i+1 {
			t.Fatalf("request %d: %d geoidem spans, want %d", i, len(got), i+1)
		}
		s := got[i]
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("request %d: span not a child of the request's span", i)
		}
		if a := attrs(s); a[otelobserve.AttrOutcome] != want || a[otelobserve.AttrStatus] != "201" {
			t.Errorf("request %d: attributes %v, want outcome %s, status 201", i, a, want)
		}
	}
	store := counts(t, k.metrics(t)["geoidem.store.operation.duration"], otelobserve.AttrStoreOp, otelobserve.AttrResult)
	if store["claim ok"] != 2 || store["complete ok"] != 1 {
		t.Errorf("store operations %v, want 2 claims and 1 complete, ok", store)
	}
}
