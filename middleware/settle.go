package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// retryable reports whether a status tells the sender to try again, so the
// response must not be recorded.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// settlePanic settles a hold whose validator or handler panicked. Before a
// final status, or after a retryable one, the claim is released. After a
// final status that is not retryable, the client has its answer and the
// work may have taken effect, so the key is completed (see
// recorder.interrupted): a retry learns the outcome and never runs the
// handler again. The observer
// reports the status actually sent (500 when none was).
func (m *Middleware) settlePanic(ctx context.Context, hold *keystore.Hold, rn *renewal, rec *recorder, tookOver bool, start time.Time) {
	ev := Event{Outcome: Released, Key: hold.Key, Status: rec.status, TookOver: tookOver, Err: ErrHandlerPanicked}
	switch {
	case hold.Completed():
		rn.stop()
		ev.Outcome = Executed
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked after recording its response", slog.String("key", hold.Key))
	case !rec.hijacked && (rec.status == 0 || retryable(rec.status)):
		if ev.Status == 0 {
			ev.Status = http.StatusInternalServerError
		}
		m.release(ctx, hold, rn)
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked; idempotency claim released", slog.String("key", hold.Key))
	default:
		ev.Outcome = Executed
		m.record(ctx, hold, rn, rec.interrupted(), &ev)
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked after its answer was sent; idempotency key completed, not released", slog.String("key", hold.Key), slog.Int("status", rec.status))
	}
	m.done(ctx, ev, start)
}

// ErrHandlerPanicked is the Event.Err of a request whose validator or
// handler panicked.
var ErrHandlerPanicked = errors.New("middleware: handler panicked")

// record completes hold with rec and reports a failure in ev. When the
// store fails (other than with a lost lease), the record is handed to the
// background (completeLater), which keeps rn renewing the lease while it
// tries again; otherwise rn is stopped.
func (m *Middleware) record(ctx context.Context, hold *keystore.Hold, rn *renewal, rec recording, ev *Event) {
	err := m.complete(ctx, hold, rec)
	if err == nil {
		rn.stop()
		return
	}
	ev.Err = err
	if errors.Is(err, keystore.ErrLeaseLost) {
		rn.stop()
		ev.Outcome = LeaseLost
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency lease lost before the response was recorded", slog.String("key", hold.Key))
		return
	}
	ev.Outcome = StoreError
	if errors.Is(err, keystore.ErrInvalidStatus) { // no retry can fix it
		rn.stop()
		m.log.LogAttrs(ctx, slog.LevelError, "idempotency record refused by the store; a retry after the lease ends will run the handler again",
			slog.String("key", hold.Key), slog.Any("error", err))
		return
	}
	m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency record not written within the request; retrying in the background while the lease holds",
		slog.String("key", hold.Key), slog.Any("error", err))
	m.completeLater(ctx, hold, rec, rn)
}

// complete records rec, once, within the request. It runs even when the
// client has gone: the work is done and its answer must be kept for the
// client's retry.
func (m *Middleware) complete(ctx context.Context, hold *keystore.Hold, rec recording) error {
	cctx, cancel := m.storeContext(detach(ctx))
	defer cancel()
	return m.storeComplete(cctx, hold, rec)
}

// storeComplete records rec under ctx: as its encoding, when it is one.
func (m *Middleware) storeComplete(ctx context.Context, hold *keystore.Hold, rec recording) error {
	if rec.enc != nil {
		return m.encoded.CompleteEncoded(ctx, hold.Key, hold.Token, rec.enc, m.retention)
	}
	return m.store.Complete(ctx, hold.Key, hold.Token, rec.rec, m.retention)
}

// release gives up hold's claim and stops rn. When the store fails (other
// than with a lost lease), the release is retried in the background
// (releaseLater) until the lease may have ended.
func (m *Middleware) release(ctx context.Context, hold *keystore.Hold, rn *renewal) {
	rn.stop()
	rctx, cancel := m.storeContext(detach(ctx))
	defer cancel()
	if err := m.store.Release(rctx, hold.Key, hold.Token); err != nil && !errors.Is(err, keystore.ErrLeaseLost) {
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency claim not released within the request; retrying in the background while the lease holds",
			slog.String("key", hold.Key), slog.Any("error", err))
		m.releaseLater(ctx, hold, rn)
	}
}
