package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
	"github.com/geoidem/geoidem/keystore"
)

// retryable reports whether an answer tells the sender to try again, so it
// must not be recorded: every 5xx, 408, 429, and 409 with a Retry-After a
// sender can read (the middleware's own "still running" answer, and a
// handler's "conflict, come back then"). It is the release rule of the
// package documentation, and the paired sender's retry rule: both are
// answer.Retried, so that every answer the sender retries is released
// (the retry runs again) and every answer it gives up on is recorded.
func retryable(status int, h http.Header) bool {
	if !answer.RetryStatus(status, true) {
		// Final whatever its Retry-After says (most answers: every 2xx):
		// the header need not be looked up, nor parsed.
		return false
	}
	var retryAfter string
	if vs := h["Retry-After"]; len(vs) > 0 { // h.Get("Retry-After"), the key already canonical
		retryAfter = vs[0]
	}
	return answer.Retried(status, retryAfter)
}

// settle ends an exchange whose validator and handler returned: the key is
// recorded, or released, or left to the handler's own record; the renewal
// goes on until then. verr is the validator's refusal, if any; gaveUp, a
// handler that returned without a word after its lease was lost.
func (x *exchange) settle(verr error, gaveUp bool) {
	m, rec, hold, rn := x.m, &x.rec.recorder, &x.hold, &x.renewal
	ev := Event{Outcome: Executed, Key: hold.Key, Status: rec.finalStatus(), TookOver: x.tookOver, Err: verr, ClockStep: rn.step()}
	switch {
	case hold.Completed():
		// The handler recorded its response itself, in its own transaction.
		rn.stop()
	case gaveUp:
		// The handler returned without a word because its lease was lost:
		// the store would refuse the record anyway; release in case it
		// did no work, so that a retry runs it again.
		ev.Outcome = Released
		m.release(x.base, hold, rn, &x.room)
	case retryable(ev.Status, rec.w.Header()) && rec.replayable():
		ev.Outcome = Released
		m.release(x.base, hold, rn, &x.room)
	case verr != nil:
		// The validator's answer has no side effect and depends on the
		// body alone: the same body gets the same answer again, so it is
		// not recorded. Kept, it would let a small body fill the store
		// with a large answer for the whole retention.
		ev.Outcome = Invalid
		m.release(x.base, hold, rn, &x.room)
	default:
		m.record(x.base, hold, rn, rec.record(), &ev, &x.room)
	}
	m.done(x.r.Context(), ev, x.start)
}

// settlePanic settles an exchange whose validator or handler panicked.
// Before a final status, or after a retryable one, the claim is released.
// After a final status that is not retryable, the client has its answer and
// the work may have taken effect, so the key is completed (see
// recorder.interrupted): a retry learns the outcome and never runs the
// handler again. The observer reports the status actually sent (500 when
// none was).
func (x *exchange) settlePanic() {
	m, rec, hold, rn := x.m, &x.rec.recorder, &x.hold, &x.renewal
	ctx := x.r.Context()
	ev := Event{Outcome: Released, Key: hold.Key, Status: rec.status, TookOver: x.tookOver, Err: ErrHandlerPanicked}
	switch {
	case hold.Completed():
		rn.stop()
		ev.Outcome = Executed
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked after recording its response", slog.String("key", hold.Key))
	case !rec.hijacked && (rec.status == 0 || retryable(rec.status, rec.w.Header())):
		if ev.Status == 0 {
			ev.Status = http.StatusInternalServerError
		}
		m.release(x.base, hold, rn, &x.room)
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked; idempotency claim released", slog.String("key", hold.Key))
	default:
		ev.Outcome = Executed
		m.record(x.base, hold, rn, rec.interrupted(), &ev, &x.room)
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked after its answer was sent; idempotency key completed, not released", slog.String("key", hold.Key), slog.Int("status", rec.status))
	}
	m.done(ctx, ev, x.start)
}

// ErrHandlerPanicked is the Event.Err of a request whose validator or
// handler panicked.
var ErrHandlerPanicked = errors.New("middleware: handler panicked")

// record completes hold with rec, the record's encoding, within the
// request (it runs even when the client has gone: the work is done and
// its answer must be kept for the client's retry), and reports a failure
// in ev. When the store fails (other than with a lost lease), the record is
// handed to the background (completeLater), which keeps rn renewing the
// lease while it tries again; otherwise rn is stopped.
func (m *Middleware) record(ctx context.Context, hold *keystore.Hold, rn *renewal, rec []byte, ev *Event, room *deadlineRoom) {
	err := m.callComplete(ctx, hold.Key, hold.Token, rec, time.Time{}, room)
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
	if errors.Is(err, keystore.ErrInvalidStatus) || errors.Is(err, keystore.ErrCorruptRecord) { // no retry can fix it
		rn.stop()
		m.log.LogAttrs(ctx, slog.LevelError, "idempotency record refused by the store; a retry after the lease ends will run the handler again",
			slog.String("key", hold.Key), slog.Any("error", err))
		return
	}
	m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency record not written within the request; retrying in the background while the lease holds",
		slog.String("key", hold.Key), slog.Any("error", err))
	m.completeLater(ctx, hold, rec, rn)
}

// release gives up hold's claim and stops rn. When the store fails (other
// than with a lost lease), the release is retried in the background
// (releaseLater) until the lease may have ended.
func (m *Middleware) release(ctx context.Context, hold *keystore.Hold, rn *renewal, room *deadlineRoom) {
	rn.stop()
	if err := m.callRelease(ctx, hold.Key, hold.Token, time.Time{}, room); err != nil && !errors.Is(err, keystore.ErrLeaseLost) {
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency claim not released within the request; retrying in the background while the lease holds",
			slog.String("key", hold.Key), slog.Any("error", err))
		m.releaseLater(ctx, hold, rn)
	}
}
