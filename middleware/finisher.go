package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// Backoff of the Completes and Releases retried in the background: the
// first retry after firstPause, each pause twice the last, at most
// maxPause (and Lease/6, as renewals after a failure), and never past the
// lease.
const (
	firstPause = 100 * time.Millisecond
	maxPause   = 2 * time.Second
)

// maxBackground bounds the records and releases retried in the background
// at once (see the package documentation, "When the store fails after the
// handler ran"). Beyond it, a Complete that fails within its request is not
// retried: the key stays in flight until its lease ends, as if the process
// had crashed. Each record retried holds its body (at most
// Config.MaxRecordBytes) until it is written or given up. A release is
// never given up for want of room: beyond the bound (half of it for the
// release of a claim whose outcome is unknown, which must leave room for
// records), it is retried inline, within its request, which then waits
// until it is written or the lease may have ended.
const maxBackground = 1024

// background counts the records and releases that the middleware is still
// trying to write after their requests have returned, for Shutdown, and
// those it gave up.
type background struct {
	mu      sync.Mutex
	n       int
	pending [3]int        // of n, by kind
	gaveUp  [3]int        // given up without being written, by kind, since New
	idle    chan struct{} // closed when n drops to 0; nil while n is 0
	quit    chan struct{} // closed when a Shutdown gives up
	quitQ   sync.Once
}

// whatOf names each kind of background work in the log.
var whatOf = [...]string{bgRecord: "record", bgRelease: "release", bgUncertain: "release of a claim whose outcome is unknown"}

// The kinds of background work.
const (
	bgRecord    = iota
	bgRelease   // of a claim the handler or validator was done with
	bgUncertain // of a claim whose reply was lost: see releaseUncertain
)

// add counts one more piece of work of kind, unless maxBackground are
// pending (maxBackground/2 for releases of uncertain claims, which must
// leave room for records): then it returns false, and counts a record as
// given up; a release is then retried inline (see later).
func (b *background) add(kind int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n >= maxBackground || kind == bgUncertain && b.n >= maxBackground/2 {
		if kind == bgRecord {
			b.gaveUp[kind]++
		}
		return false
	}
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	b.pending[kind]++
	return true
}

// done ends one piece of work of kind, given up without being written or
// not.
func (b *background) done(kind int, gaveUp bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	b.pending[kind]--
	if gaveUp {
		b.gaveUp[kind]++
	}
	if b.n == 0 {
		close(b.idle)
		b.idle = nil
	}
}

// state returns a channel closed when no work is pending (nil if none is
// now).
func (b *background) state() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.idle
}

func (b *background) quitting() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quit == nil {
		b.quit = make(chan struct{})
	}
	return b.quit
}

// giveUp tells the pending work to give up (once the store call under way
// returns) and returns what it gives up: the pending work, and, in all,
// the records and releases given up so far counted with it.
func (b *background) giveUp() (pending, records, releases int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quit == nil {
		b.quit = make(chan struct{})
	}
	b.quitQ.Do(func() { close(b.quit) })
	return b.n, b.gaveUp[bgRecord] + b.pending[bgRecord], b.gaveUp[bgRelease] + b.pending[bgRelease]
}

// gaveUpInline counts a release of kind retried inline and given up.
func (b *background) gaveUpInline(kind int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gaveUp[kind]++
}

// given returns the records and releases given up so far. The releases of
// claims whose outcome was unknown are not among them: such a claim may
// never have reached the store (a store that is down fails every claim),
// and if it did, the key is free again once its lease ends, as for a
// crashed process; they are logged.
func (b *background) given() (records, releases int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gaveUp[bgRecord], b.gaveUp[bgRelease]
}

// ShutdownError is the error of a Shutdown that gave anything up: records
// not written (their keys stay in flight until their store lease ends, and
// the first retry after that runs the handler again) and releases not
// written (their keys answer 409 until then).
type ShutdownError struct {
	// Pending is how much work was still pending when Shutdown's context
	// ended, releases of claims whose outcome was unknown included: given
	// up then, after the store call under way (which may still succeed:
	// the counts are an upper bound).
	Pending int
	// Records and Releases are the records and releases given up without
	// being written since the Middleware was created, those pending
	// included: their lease may have ended in a stall, the store refused
	// them, maxBackground was reached (records only), or Shutdown gave them up. The
	// releases of claims whose outcome was unknown (see Pending) are not
	// counted: such a claim may never have reached the store.
	Records, Releases int
	// Err is the context's error when Shutdown's context ended with work
	// pending; nil otherwise.
	Err error
}

func (e *ShutdownError) Error() string {
	msg := fmt.Sprintf("middleware: %d records and %d releases given up in the background", e.Records, e.Releases)
	if e.Err != nil {
		msg += fmt.Sprintf(", %d of them still pending at shutdown: %v", e.Pending, e.Err)
	}
	return msg
}

// Unwrap returns Err.
func (e *ShutdownError) Unwrap() error { return e.Err }

// Shutdown waits until the middleware has no work left in the background:
// records and releases that failed within their requests and are being
// retried (see the package documentation, "When the store fails after the
// handler ran"). It does not stop the middleware from serving: call it
// after http.Server.Shutdown has returned, so that no request can start
// new background work.
//
// It returns nil once nothing is pending if nothing was ever given up.
// Otherwise it returns a *ShutdownError that says how many records and
// releases were given up: before Shutdown (a lease that may have ended in
// a stall, a store that refused them, a record beyond maxBackground), or by
// Shutdown itself when ctx ends first. Then the error also wraps ctx.Err()
// and says how much was still pending. That work is given up after the
// store call under way (bounded by Config.StoreTimeout): a record not
// written leaves its key in flight until its lease ends, and the first
// retry after that runs the handler again; a release not written leaves
// its key blocked (409) until its lease ends. From then on, a record or
// release that fails within its request is not retried.
func (m *Middleware) Shutdown(ctx context.Context) error {
	if idle := m.bg.state(); idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			pending, records, releases := m.bg.giveUp()
			if pending > 0 {
				return &ShutdownError{Pending: pending, Records: records, Releases: releases, Err: ctx.Err()}
			}
		}
	}
	if records, releases := m.bg.given(); records+releases > 0 {
		return &ShutdownError{Records: records, Releases: releases}
	}
	return nil
}

// completeLater goes on trying to record rec for hold in the background,
// after the Complete within the request failed, until it is stored, the
// lease is lost or may have ended (rn's reckoning), or Shutdown gives up.
// The renewal goes on extending the lease for one more Config.Lease, no
// longer, so that a store that refuses the record for good (but extends
// leases) cannot block the key for ever: the background ends at most
// Lease + StoreLease after the handler returned. It stops rn when it ends.
func (m *Middleware) completeLater(ctx context.Context, hold *keystore.Hold, rec []byte, rn *renewal) {
	m.later(ctx, hold, rn, bgRecord, func(ctx context.Context, until time.Time) error {
		return m.callComplete(ctx, hold.Key, hold.Token, rec, until, nil)
	})
}

// releaseLater goes on trying to release hold in the background, after the
// Release within the request failed, until it is released or the lease may
// have ended (after which the key is free anyway), or Shutdown gives up.
// The renewal is already stopped: extending a lease one is trying to give
// up would only keep the key blocked longer.
func (m *Middleware) releaseLater(ctx context.Context, hold *keystore.Hold, rn *renewal) {
	m.later(ctx, hold, rn, bgRelease, func(ctx context.Context, until time.Time) error {
		return m.callRelease(ctx, hold.Key, hold.Token, until, nil)
	})
}

// releaseUncertain releases, in the background, a key that the Claim sent
// at sent with token tok may have acquired although it failed (see
// claimOnce): at once, then, while the store fails, again with a backoff
// until the lease that Claim would have started may have ended. The first
// Release that the store answers settles it: if the Claim acquired the
// key, the key is free again; if not, the Release fails with
// keystore.ErrLeaseLost, changes nothing, and fences tok, so that the Claim
// never acquires the key, however late it reaches the store.
func (m *Middleware) releaseUncertain(ctx context.Context, key string, tok keystore.Token, sent time.Time) {
	hold := &keystore.Hold{Key: key, Token: tok, Retention: m.retention}
	rn := new(renewal)
	rn.fixed(m, hold, sent)
	m.later(ctx, hold, rn, bgUncertain, func(ctx context.Context, until time.Time) error {
		return m.callRelease(ctx, hold.Key, hold.Token, until, nil)
	})
}

// later runs op in the background, under ctx (the request's context
// detached from its cancellation), bounded by StoreTimeout and by the
// time until which the token surely holds its key, until it succeeds, the
// lease is lost or may have ended, or Shutdown gives up: with a pause
// before each try (the first was made within the request), except for the
// release of an uncertain claim, which tries at once.
func (m *Middleware) later(ctx context.Context, hold *keystore.Hold, rn *renewal, kind int, op func(ctx context.Context, until time.Time) error) {
	quit := m.bg.quitting()
	first := 2 // the try within the request was the first
	if kind == bgUncertain {
		first = 1
	}
	if !m.bg.add(kind) {
		if kind == bgRecord {
			rn.stop()
			m.log.LogAttrs(ctx, slog.LevelError, "idempotency "+whatOf[kind]+" not written, and not retried: too much background work already (1,024 records and releases)",
				slog.String("key", hold.Key))
			return
		}
		// A release forgotten would block its key for the whole lease:
		// with no room in the background, it is retried here, within the
		// request.
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency "+whatOf[kind]+" retried within the request: too much background work already (1,024 records and releases)",
			slog.String("key", hold.Key))
		if !m.retry(ctx, hold, rn, kind, op, first, quit) {
			m.bg.gaveUpInline(kind)
		}
		return
	}
	go func() {
		gaveUp := true
		defer func() { m.bg.done(kind, gaveUp) }()
		gaveUp = !m.retry(ctx, hold, rn, kind, op, first, quit)
	}()
}

// retry makes op's tries from the first-th on, with a pause before each
// but the first of them (when first > 1), until it succeeds, the lease is
// lost or may have ended, or quit is closed, and reports whether it was
// written (or, for an uncertain claim, found to need nothing). It stops rn
// when it returns.
func (m *Middleware) retry(ctx context.Context, hold *keystore.Hold, rn *renewal, kind int, op func(ctx context.Context, until time.Time) error, first int, quit <-chan struct{}) (written bool) {
	what := whatOf[kind]
	renewFor := time.Now().Add(m.lease)
	defer rn.stop()
	pause := firstPause
	for try := first; ; try++ {
		if !time.Now().Before(renewFor) {
			rn.stop() // a store that refuses the record for good must not block the key for ever
		}
		until, ok := rn.held()
		if !ok {
			m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency "+what+" not written before the lease may have ended; given up",
				slog.String("key", hold.Key), slog.Int("tries", try-1))
			return false
		}
		if try > 1 {
			t := time.NewTimer(min(pause, time.Until(until)))
			select {
			case <-quit:
				t.Stop()
				m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency "+what+" not written; given up at shutdown",
					slog.String("key", hold.Key), slog.Int("tries", try-1))
				return false
			case <-t.C:
			}
			pause = min(2*pause, maxPause, max(m.lease/6, time.Millisecond))
			if until, ok = rn.held(); !ok {
				continue // logged above
			}
		}
		err := op(ctx, until) // no use of the token after the lease may have ended
		switch {
		case err == nil:
			m.log.LogAttrs(ctx, slog.LevelInfo, "idempotency "+what+" written on a later try",
				slog.String("key", hold.Key), slog.Int("tries", try))
			return true
		case errors.Is(err, keystore.ErrLeaseLost) && kind == bgUncertain:
			// The claim did not acquire the key (or its lease ended):
			// there was nothing to release, and the token is fenced.
			m.log.LogAttrs(ctx, slog.LevelDebug, "idempotency claim whose outcome was unknown had not acquired its key; its token is fenced",
				slog.String("key", hold.Key), slog.Int("tries", try))
			return true
		case errors.Is(err, keystore.ErrLeaseLost):
			m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency "+what+" refused: the lease was lost",
				slog.String("key", hold.Key), slog.Int("tries", try))
			return false
		}
	}
}
