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
// handler when the lease may soon end.
//
// The middleware keeps its own conservative reckoning of the lease, on the
// monotonic clock, from the time the last successful Claim or Extend was
// sent. The store grants each of them StoreLease (Lease + Lease/2 +
// StoreTimeout), so the key is surely held until that time plus
// StoreLease: until. The handler, though, is stopped earlier, at that time
// plus Lease (stopAt): whatever the store answers (an error, a timeout,
// nothing at all), its context is then canceled with keystore.ErrLeaseLost
// as its cause. The difference is what makes the documented promise true,
// that a stall shorter than the lease loses no record: the last successful
// renewal may have been sent up to Lease/3 + StoreTimeout before the stall
// began, and a record or renewal retried after the stall must still find
// the key held. Extensions are sent every Lease/3 (and Lease/6 after one
// fails), each bounded by StoreTimeout, which New keeps below Lease/3 so
// that at least one fits; they go on after the handler was stopped, until
// the key is recorded, released or may be lost.
//
// until is also what a later use of the token (a Complete or Release
// retried in the background) can consult: from then on another request
// may hold the key, and the store fences the token.
//
// A handler that commits the key's record in its own transaction
// (keystore.Hold.Commit) holds the key for as long as the commit runs: no
// other request can take it over, and a renewal may wait on the
// transaction (on PostgreSQL, for its row lock) until it ends. So while the
// hold is committing, the handler is never stopped for a renewal that does
// not succeed: once the commit is done, the record is in (and the renewal
// ends), or the transaction rolled back and the reckoning resumes.
//
// It runs on the Middleware's schedule (one timer for all requests), not
// a goroutine or a timer of its own, so a handler that finishes within
// Lease/3 costs no more than a push and a removal in its heap. It fires for
// the next extension or, while one is under way, for the handler's stop or
// the expiry; no lock is held while the store is called, so neither is
// ever delayed by a store that hangs.
type renewal struct {
	scheduleItem
	m    *Middleware
	ctx  context.Context // the request's, detached: the values of the store calls
	hold *keystore.Hold
	lost context.CancelCauseFunc

	mu        sync.Mutex    // guards the fields below
	stopped   bool          // the renewal is over: no more extensions
	ended     bool          // the lease is gone, or may be: the token is spent
	extending bool          // an Extend is under way
	canceled  bool          // the handler's context was canceled at stopAt
	sent      time.Time     // the last successful Claim or Extend was sent then (see stopAt, until)
	next      time.Time     // the next extension is due
	clockStep time.Duration // see Event.ClockStep
}

// start starts renewing hold's lease, acquired by a Claim sent at sent,
// with ctx's values; lost cancels the handler.
func (rn *renewal) start(m *Middleware, ctx context.Context, hold *keystore.Hold, lost context.CancelCauseFunc, sent time.Time) {
	rn.m, rn.ctx, rn.hold, rn.lost = m, ctx, hold, lost
	rn.mu.Lock() // Run must not run before rn is set up
	defer rn.mu.Unlock()
	rn.renewed(sent)
	m.sched.Set(rn, rn.next)
}

// fixed sets up a renewal that never extends: the reckoning of a lease
// acquired, or perhaps acquired, by a Claim sent at sent, for a release
// (abandon, releaseUncertain) retried while the token may hold its key.
func (rn *renewal) fixed(m *Middleware, hold *keystore.Hold, sent time.Time) {
	rn.m, rn.hold, rn.lost = m, hold, func(error) {}
	rn.renewed(sent)
	rn.stopped = true
}

// renewed moves the reckoning on after a Claim or Extend sent at sent
// succeeded. rn.mu is held (or rn not yet shared). Only the next
// extension is reckoned here; stopAt and until follow from sent when they
// are needed, which a handler that returns within Lease/3 never does.
func (rn *renewal) renewed(sent time.Time) {
	rn.sent, rn.next = sent, sent.Add(rn.m.lease/3)
}

// stopAt returns the time from which the handler is stopped. rn.mu is held.
func (rn *renewal) stopAt() time.Time { return rn.sent.Add(rn.m.lease) }

// until returns the time from which the lease may have ended. rn.mu is held.
func (rn *renewal) until() time.Time { return rn.sent.Add(rn.m.storeLease) }

// arm sets the timer for the next extension, or for the handler's stop or
// the expiry if that comes first or an extension is under way. rn.mu is
// held.
func (rn *renewal) arm() {
	at := rn.until()
	if stopAt := rn.stopAt(); !rn.canceled && stopAt.Before(at) {
		at = stopAt
	}
	if !rn.extending && rn.next.Before(at) {
		at = rn.next
	}
	rn.m.sched.Set(rn, at)
}

// Run is the renewal's tick, which the schedule runs when it is due.
func (rn *renewal) Run() {
	rn.mu.Lock()
	if rn.stopped || rn.hold.Completed() {
		rn.mu.Unlock()
		return
	}
	if rn.hold.Committing() {
		// The handler's own transaction holds the key: look again later,
		// and extend meanwhile, but never stop the handler now.
		rn.m.sched.Set(rn, time.Now().Add(max(rn.m.lease/6, time.Millisecond)))
		if !rn.extending && !time.Now().Before(rn.next) {
			rn.extending = true
			until := rn.until()
			rn.mu.Unlock()
			rn.extend(until)
			return
		}
		rn.mu.Unlock()
		return
	}
	if !time.Now().Before(rn.until()) {
		rn.stopped, rn.ended, rn.canceled = true, true, true
		rn.mu.Unlock()
		rn.m.log.LogAttrs(rn.ctx, slog.LevelWarn, "idempotency lease may have ended (no renewal succeeded in time)",
			slog.String("key", rn.hold.Key))
		rn.lost(keystore.ErrLeaseLost)
		return
	}
	if !rn.canceled && !time.Now().Before(rn.stopAt()) {
		// No renewal succeeded for a whole Lease: stop the handler while
		// the store's lease still holds, and go on renewing, so that its
		// answer can still be recorded.
		rn.canceled = true
		rn.mu.Unlock()
		rn.m.log.LogAttrs(rn.ctx, slog.LevelWarn, "idempotency lease not renewed for a whole lease; handler canceled",
			slog.String("key", rn.hold.Key))
		rn.lost(keystore.ErrLeaseLost)
		rn.mu.Lock()
		if rn.stopped {
			rn.mu.Unlock()
			return
		}
	}
	if rn.extending || time.Now().Before(rn.next) {
		rn.arm()
		rn.mu.Unlock()
		return
	}
	rn.extending = true
	rn.arm() // watch the expiry while the store is called
	until := rn.until()
	rn.mu.Unlock()
	rn.extend(until)
}

// extend sends one Extend, bounded by until (no use of the token after the
// lease may have ended), and moves the reckoning on.
func (rn *renewal) extend(until time.Time) {
	m := rn.m
	sent := time.Now()
	left, err := m.callExtend(rn.ctx, rn.hold.Key, rn.hold.Token, until)
	if err == nil && left > 0 {
		rn.checkClock(left, until.Sub(sent))
	}

	rn.mu.Lock()
	rn.extending = false
	if rn.stopped {
		rn.mu.Unlock()
		return
	}
	switch {
	case err == nil:
		rn.renewed(sent)
	case errors.Is(err, keystore.ErrLeaseLost) && !rn.hold.Completed() && !rn.hold.Committing():
		rn.stopped, rn.ended, rn.canceled = true, true, true
		rn.m.sched.Cancel(rn)
		rn.mu.Unlock()
		m.log.LogAttrs(rn.ctx, slog.LevelWarn, "idempotency lease lost while the handler ran", slog.String("key", rn.hold.Key))
		rn.lost(keystore.ErrLeaseLost)
		return
	default:
		rn.next = time.Now().Add(m.lease / 6)
		if !rn.hold.Completed() {
			m.log.LogAttrs(rn.ctx, slog.LevelWarn, "idempotency lease not extended; retrying", slog.String("key", rn.hold.Key), slog.Any("error", err))
		}
	}
	rn.arm()
	rn.mu.Unlock()
}

// checkClock compares the remaining lease the store reported on an Extend
// (by its clock) with the middleware's reckoning of it when the Extend was
// sent (on the monotonic clock). They differ by at most the store calls'
// latencies, each under StoreTimeout; beyond clockTolerance, the store's
// clock was stepped (or the store does not keep leases as it should): the
// middleware logs an error and reports the difference in the request's
// Event.ClockStep.
func (rn *renewal) checkClock(reported, reckoned time.Duration) {
	m := rn.m
	diff := reported - reckoned
	if diff.Abs() <= m.clockTolerance() {
		return
	}
	rn.mu.Lock()
	rn.clockStep = diff
	rn.mu.Unlock()
	m.log.LogAttrs(rn.ctx, slog.LevelError, "idempotency store clock disagrees with the lease reckoning: was the store host's clock stepped? Store hosts must slew their clocks, not step them; a step forward ends leases early and lets a duplicate run alongside its original",
		slog.String("key", rn.hold.Key), slog.Duration("store_remaining", reported), slog.Duration("reckoned_remaining", reckoned), slog.Duration("difference", diff))
}

// clockTolerance is how far the remaining lease a store reports may be
// from the middleware's reckoning before it is taken for a clock step:
// StoreTimeout (the latencies of two store calls, each under it, account
// for that much) plus Lease/10.
func (m *Middleware) clockTolerance() time.Duration { return m.storeTimeout + m.lease/10 }

// step returns the clock step detected, if any (see Event.ClockStep).
func (rn *renewal) step() time.Duration {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.clockStep
}

// held returns the time until which the token surely holds its key, and
// false once the lease is lost or may have ended (by the reckoning above):
// a Complete or Release retried in the background uses it as its deadline
// and gives up when it is false.
func (rn *renewal) held() (until time.Time, ok bool) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	until = rn.until()
	if rn.ended || !time.Now().Before(until) {
		rn.ended = true
		return until, false
	}
	return until, true
}

// stop ends the renewal when the handler's response is recorded or
// released (or handed to the background, see finisher.go). It does not wait for an
// extension under way: its answer is ignored, and the store fences it.
func (rn *renewal) stop() {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.stopped = true
	if rn.m != nil {
		rn.m.sched.Cancel(rn)
	}
}
