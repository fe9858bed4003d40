// Package otelobserve records the geoidem middleware's outcomes and the key
// store's latencies as OpenTelemetry metrics, and each request's outcome as
// a span. It is a module of its own, apart from package promobserve, so
// that an application inherits only what it uses; the package imports the
// OpenTelemetry API only (its tests use the SDK).
//
//	tel, err := otelobserve.New(meterProvider, tracerProvider)
//	…
//	idem, err := middleware.New(store, middleware.Config{Observer: tel.Observe, StoreObserver: tel.ObserveStore})
//	handler := otelhttp.NewHandler(idem.Handler(ingest), "ingest") // the server span
//
// # Spans
//
// The middleware sees no route and writes no server span: put otelhttp's
// handler (go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp)
// or your router's tracing around the middleware's handler. It starts the
// server span per the HTTP semantic conventions (named "POST /features"
// from the route, kind server, http.request.method, http.route,
// url.path, http.response.status_code) and puts it in the request's
// context; [Observer.Observe] then records a child span of it,
// "geoidem.request", kind internal, covering the time from the middleware
// receiving the request to its outcome, with the attributes geoidem.outcome,
// http.response.status_code, geoidem.took_over and geoidem.key. Without a
// server span in the context, geoidem.request is a root span.
//
// # The front door
//
// [FrontDoor] records a service's front door (frontdoor.Door): its
// connections refused or closed, bodies cut off, refusals and slots held,
// as observable instruments named as package promobserve's series
// (geoidem_frontdoor_*, listed by frontdoor.Stats.Series).
//
// # Several observers
//
// middleware.Config.Observer receives a middleware.Event per request the
// middleware handles (every request of a covered method, those refused
// without a key included), and middleware.Config.StoreObserver a
// middleware.StoreCall per Claim, Extend, Complete and Release it makes: the
// middleware observes its own calls, so nothing wraps the store, and the
// store keeps every capability it has. Each takes one callback; to feed
// several (this observer, package promobserve's, and an application's
// own), call each in turn from one, which must be fast and safe for
// concurrent use:
//
//	idem, err := middleware.New(store, middleware.Config{
//		Observer:      func(ev middleware.Event) { tel.Observe(ev); mine.Observe(ev) },
//		StoreObserver: func(c middleware.StoreCall) { tel.ObserveStore(c); mine.ObserveStore(c) },
//	})
//
// The middleware's own debug log (Config.Logger at slog.LevelDebug) has a
// record per outcome, logged with the request's context, so a handler that
// adds the trace id to records correlates them with the request's trace.
package otelobserve

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/geoidem/geoidem/middleware"
)

// instrumentationName names the meter and the tracer of an [OTel].
const instrumentationName = "github.com/geoidem/geoidem/observe/otelobserve"

// Attribute keys of the spans and metrics an [OTel] records.
const (
	AttrOutcome  = attribute.Key("geoidem.outcome")           // middleware.Outcome's name
	AttrTookOver = attribute.Key("geoidem.took_over")         // Event.TookOver
	AttrKey      = attribute.Key("geoidem.key")               // Event.Key (the stored, hashed key)
	AttrStatus   = attribute.Key("http.response.status_code") // Event.Status
	AttrStoreOp  = attribute.Key("geoidem.store.operation")   // StoreCall.Op
	AttrResult   = attribute.Key("geoidem.store.result")      // "ok" or "error"
)

// Observer records the middleware's outcomes and the store's latencies as
// OpenTelemetry metrics, and each request's outcome as a span. Its methods
// are safe for concurrent use.
//
// The instruments, with the meaning of package promobserve's series of the
// same name:
//
//	geoidem.requests                  counter, attribute geoidem.outcome
//	geoidem.request.duration          histogram (s), attribute geoidem.outcome
//	geoidem.lease.takeovers           counter
//	geoidem.store.operation.duration  histogram (s), attributes geoidem.store.operation and geoidem.store.result
type Observer struct {
	tracer    trace.Tracer
	requests  metric.Int64Counter
	latency   metric.Float64Histogram
	takeovers metric.Int64Counter
	store     metric.Float64Histogram
	outcomes  map[middleware.Outcome]attribute.Set
	ops       map[middleware.StoreOp][2]attribute.Set // [0] ok, [1] error
}

// New creates the instruments on a meter of mp and the spans with a
// tracer of tp (nil: the global providers of package otel), and adds 0 to
// every outcome's counter, so that it is reported before the first request.
func New(mp metric.MeterProvider, tp trace.TracerProvider) (*Observer, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	meter := mp.Meter(instrumentationName)
	t := &Observer{tracer: tp.Tracer(instrumentationName), outcomes: map[middleware.Outcome]attribute.Set{}}
	var errs [4]error
	t.requests, errs[0] = meter.Int64Counter("geoidem.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests the middleware handled, by outcome (rejected ones, without a key or with a malformed one, included)."))
	t.latency, errs[1] = meter.Float64Histogram("geoidem.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from receiving a request to settling its outcome."),
		metric.WithExplicitBucketBoundaries(exponentialBuckets(0.0005, 2, 16)...))
	t.takeovers, errs[2] = meter.Int64Counter("geoidem.lease.takeovers", metric.WithUnit("{takeover}"),
		metric.WithDescription("Keys acquired by taking over the expired lease of an earlier request."))
	t.store, errs[3] = meter.Float64Histogram("geoidem.store.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of key store operations, by operation and result."),
		metric.WithExplicitBucketBoundaries(exponentialBuckets(0.0001, 2, 16)...))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	ctx := context.Background()
	for _, o := range middleware.Outcomes() {
		t.outcomes[o] = attribute.NewSet(AttrOutcome.String(o.String()))
		t.requests.Add(ctx, 0, metric.WithAttributeSet(t.outcomes[o]))
	}
	t.takeovers.Add(ctx, 0)
	t.ops = map[middleware.StoreOp][2]attribute.Set{}
	for _, op := range middleware.StoreOps() {
		t.ops[op] = [2]attribute.Set{storeSet(string(op), "ok"), storeSet(string(op), "error")}
	}
	return t, nil
}

// Observe records ev in the metrics and as a span named "geoidem.request":
// a middleware.Config.Observer. The span is a child of the span in
// ev.Context (the server span, if otelhttp or a router traces requests:
// see the package documentation), starts
// ev.Latency before now and ends now. Its attributes are geoidem.outcome,
// http.response.status_code, geoidem.took_over and, when a key was read,
// geoidem.key. Its status is Error for StoreError, LeaseLost and a handler
// that panicked (Err is middleware.ErrHandlerPanicked), with ev.Err, if
// any, recorded on the span; unset for every other outcome.
func (t *Observer) Observe(ev middleware.Event) {
	ctx := ev.Context
	if ctx == nil {
		ctx = context.Background()
	}
	end := time.Now()
	set, ok := t.outcomes[ev.Outcome]
	if !ok {
		set = attribute.NewSet(AttrOutcome.String(ev.Outcome.String()))
	}
	t.requests.Add(ctx, 1, metric.WithAttributeSet(set))
	t.latency.Record(ctx, ev.Latency.Seconds(), metric.WithAttributeSet(set))
	if ev.TookOver {
		t.takeovers.Add(ctx, 1)
	}

	attrs := []attribute.KeyValue{
		AttrOutcome.String(ev.Outcome.String()),
		AttrStatus.Int(ev.Status),
		AttrTookOver.Bool(ev.TookOver),
	}
	if ev.Key != "" {
		attrs = append(attrs, AttrKey.String(ev.Key))
	}
	_, span := t.tracer.Start(ctx, "geoidem.request",
		trace.WithTimestamp(end.Add(-ev.Latency)), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if ev.Outcome == middleware.StoreError || ev.Outcome == middleware.LeaseLost || errors.Is(ev.Err, middleware.ErrHandlerPanicked) {
		desc := ev.Outcome.String()
		if ev.Err != nil {
			desc = ev.Err.Error()
			span.RecordError(ev.Err, trace.WithTimestamp(end))
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End(trace.WithTimestamp(end))
}

// ObserveStore records c's latency with its operation and result: an
// middleware.Config.StoreObserver, and a pgstore.Config.Observer.
func (t *Observer) ObserveStore(c middleware.StoreCall) {
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
	i, result := 0, "ok"
	if c.Err != nil {
		i, result = 1, "error"
	}
	set, ok := t.ops[c.Op]
	if !ok {
		set[i] = storeSet(string(c.Op), result)
	}
	t.store.Record(ctx, c.Latency.Seconds(), metric.WithAttributeSet(set[i]))
}

func storeSet(op, result string) attribute.Set {
	return attribute.NewSet(AttrStoreOp.String(op), AttrResult.String(result))
}

// exponentialBuckets returns n bucket boundaries, the first start, each
// factor times the one before.
func exponentialBuckets(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}
