// Package observe is the glue between the geoidem middleware, its key
// store, and whatever watches them: metrics, traces, logs. It uses only the
// standard library; the Prometheus and OpenTelemetry observers are modules
// of their own (github.com/geoidem/geoidem/observe/promobserve and
// github.com/geoidem/geoidem/observe/otelobserve), so that an application
// inherits only the client it uses.
//
// Three callbacks carry everything:
//
//   - middleware.Config.Observer receives a [middleware.Event] per request
//     the middleware handles (every request of a covered method, including
//     those rejected without a key, Outcome Rejected with an empty Key): its
//     outcome, status, latency and the request's context.
//   - middleware.Config.StoreObserver receives a [middleware.StoreCall] per
//     Claim, Extend, Complete and Release the middleware makes: the
//     operation, its latency and its error. The middleware observes its own
//     calls, so nothing wraps the store, and the store keeps every
//     capability it has.
//   - pgstore.Config.Observer receives a [middleware.StoreCall] (Op
//     middleware.OpComplete) per completion made by pgstore's InTx or
//     CompleteTx, inside the handler's transaction, which the middleware
//     does not make.
//
// [All] feeds one callback to several, so Prometheus, OpenTelemetry and an
// application's own observer can watch the same middleware:
//
//	prom, err := promobserve.New(registry)
//	…
//	tel, err := otelobserve.New(meterProvider, tracerProvider)
//	…
//	idem, err := middleware.New(new(memstore.Store), middleware.Config{
//		Observer:      observe.All(prom.Observe, tel.Observe),
//		StoreObserver: observe.All(prom.ObserveStore, tel.ObserveStore),
//	})
//
// The middleware's own debug log (Config.Logger at slog.LevelDebug) has a
// record per outcome, logged with the request's context, so a handler that
// adds the trace id to records correlates them with the request's trace.
package observe
