// Package observe turns the geoidem middleware's events and the key store's
// latencies into Prometheus series and OpenTelemetry spans and metrics.
//
// Two callbacks carry everything:
//
//   - middleware.Config.Observer receives a [middleware.Event] per request
//     that carried a key: its outcome, status, latency and the request's
//     context.
//   - [Store] wraps a [keystore.Store] and reports a [StoreCall] per Claim,
//     Extend, Complete and Release: the operation, its latency and its
//     error. The wrapper keeps the store's optional capabilities
//     ([keystore.Pinger], [keystore.NonBlocking]), so the middleware treats
//     the wrapped store exactly as the store itself.
//
// [Prometheus] and [OTel] each have an Observe method for the first and an
// ObserveStore method for the second; [All] feeds one callback to several,
// so Prometheus, OpenTelemetry and an application's own observer can watch
// the same middleware:
//
//	prom, err := observe.NewPrometheus(registry)
//	…
//	tel, err := observe.NewOTel(meterProvider, tracerProvider)
//	…
//	store := observe.Store(new(memstore.Store), observe.All(prom.ObserveStore, tel.ObserveStore))
//	idem, err := middleware.New(store, middleware.Config{
//		Observer: observe.All(prom.Observe, tel.Observe),
//	})
//
// # Series
//
// Prometheus, all present (at 0) from registration on:
//
//	geoidem_requests_total{outcome}                counter, by middleware.Outcome
//	geoidem_request_duration_seconds{outcome}      histogram of Event.Latency
//	geoidem_lease_takeovers_total                  counter of Event.TookOver
//	geoidem_store_operation_seconds{op}            histogram of StoreCall.Latency, op "claim_ok", "claim_error", …
//
// OpenTelemetry: the instruments geoidem.requests, geoidem.request.duration,
// geoidem.lease.takeovers and geoidem.store.operation.duration with the same
// meaning, and one span per request (see [OTel.Observe]).
//
// This package is not part of the geoidem library: it lives with the
// examples, so that the library's users inherit neither the Prometheus
// client nor OpenTelemetry.
package observe
