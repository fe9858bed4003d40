package middleware

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// renewal keeps a hold's lease while the handler runs, and stops the
// handler when the lease may have ended.
//
// The middleware keeps its own conservative reckoning of the lease: it
// surely holds the key until the time the last successful Claim or Extend
// was sent, plus the lease, on the monotonic clock. Whatever the store
// answers (an error, a timeout, nothing at all), once that time comes the
// handler's context is canceled with keystore.ErrLeaseLost as its cause,
// because another request may take the key over from then on. Extensions
// are sent every lease/3 (and lease/6 after one fails), each bounded by
// StoreTimeout, which New keeps below lease/3 so that at least one fits.
//
// until is also the bound for any later use of the token: a Complete or
// Release retried after it would only be fenced by the store.
//
// It runs on timers, not a goroutine of its own, so a handler that finishes
// within lease/3 costs no more than arming and stopping two timers. No lock
// is held while the store is called, so the expiry is never delayed by a
// store that hangs.
type renewal struct {
	m    *Middleware
	ctx  context.Context // the handler's: for its values, and to cancel
	hold *keystore.Hold
	lost context.CancelCauseFunc

	mu      sync.Mutex // guards the fields below
	stopped bool       // the handler returned, or the lease is gone
	until   time.Time  // the lease may have ended from then on
	renew   *time.Timer
	expire  *time.Timer
}

func (rn *renewal) start(m *Middleware, ctx context.Context, hold *keystore.Hold, lost context.CancelCauseFunc, sent time.Time) {
	rn.m, rn.ctx, rn.hold, rn.lost = m, ctx, hold, lost
	rn.mu.Lock() // the callbacks must not run before the timers are assigned
	defer rn.mu.Unlock()
	rn.until = sent.Add(m.lease)
	rn.expire = time.AfterFunc(time.Until(rn.until), rn.expired)
	rn.renew = time.AfterFunc(time.Until(sent.Add(m.lease/3)), rn.extend)
}

// expired cancels the handler once the lease may have ended.
func (rn *renewal) expired() {
	rn.mu.Lock()
	if rn.stopped || rn.hold.Completed() {
		rn.mu.Unlock()
		return
	}
	if left := time.Until(rn.until); left > 0 { // extended meanwhile
		rn.expire.Reset(left)
		rn.mu.Unlock()
		return
	}
	rn.stopped = true
	rn.renew.Stop()
	rn.mu.Unlock()
	rn.m.log.LogAttrs(rn.ctx, slog.LevelWarn, "idempotency lease may have ended (no renewal succeeded in time); handler canceled",
		slog.String("key", rn.hold.Key))
	rn.lost(keystore.ErrLeaseLost)
}

func (rn *renewal) extend() {
	rn.mu.Lock()
	if rn.stopped || rn.hold.Completed() {
		rn.mu.Unlock()
		return
	}
	until := rn.until
	rn.mu.Unlock()

	m := rn.m
	sent := time.Now()
	ctx, cancel := m.storeContext(context.WithoutCancel(rn.ctx))
	ctx, cancel2 := context.WithDeadline(ctx, until) // no use after the lease may have ended
	err := m.store.Extend(ctx, rn.hold.Key, rn.hold.Token, m.lease)
	cancel2()
	cancel()

	rn.mu.Lock()
	if rn.stopped {
		rn.mu.Unlock()
		return
	}
	switch {
	case err == nil:
		rn.until = sent.Add(m.lease)
		rn.expire.Reset(time.Until(rn.until))
		rn.renew.Reset(time.Until(sent.Add(m.lease / 3)))
		rn.mu.Unlock()
	case errors.Is(err, keystore.ErrLeaseLost) && !rn.hold.Completed():
		rn.stopped = true
		rn.expire.Stop()
		rn.mu.Unlock()
		m.log.LogAttrs(rn.ctx, slog.LevelWarn, "idempotency lease lost while the handler ran", slog.String("key", rn.hold.Key))
		rn.lost(keystore.ErrLeaseLost)
	default:
		rn.renew.Reset(m.lease / 6)
		rn.mu.Unlock()
		if !rn.hold.Completed() {
			m.log.LogAttrs(rn.ctx, slog.LevelWarn, "idempotency lease not extended; retrying", slog.String("key", rn.hold.Key), slog.Any("error", err))
		}
	}
}

// stop ends the renewal when the handler returns. It does not wait for an
// extension under way: its answer is ignored, and the store fences it.
func (rn *renewal) stop() {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.stopped = true
	rn.renew.Stop()
	rn.expire.Stop()
}
