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

// MaxBackground bounds the records and releases retried in the background
// at once (see the package documentation, "When the store fails after the
// handler ran"). Beyond it, a Complete or Release that fails within its
// request is not retried: the key stays in flight until its lease ends, as
// if the process had crashed. Each record retried holds its body (at most
// Config.MaxRecordBytes) until it is written or given up.
const MaxBackground = 1024

// background counts the records and releases that the middleware is still
// trying to write after their requests have returned, for Shutdown.
type background struct {
	mu    sync.Mutex
	n     int
	idle  chan struct{} // closed when n drops to 0; nil while n is 0
	quit  chan struct{} // closed when a Shutdown gives up
	quitQ sync.Once
}

// add counts one more piece of work, unless MaxBackground are pending.
func (b *background) add() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n >= MaxBackground {
		return false
	}
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	return true
}

func (b *background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	if b.n == 0 {
		close(b.idle)
		b.idle = nil
	}
}

// state returns a channel closed when no work is pending (nil if none is
// now), and the pending count.
func (b *background) state() (<-chan struct{}, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.idle, b.n
}

func (b *background) quitting() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quit == nil {
		b.quit = make(chan struct{})
	}
	return b.quit
}

func (b *background) giveUp() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quit == nil {
		b.quit = make(chan struct{})
	}
	b.quitQ.Do(func() { close(b.quit) })
}

// Shutdown waits until the middleware has no work left in the background:
// records and releases that failed within their requests and are being
// retried (see the package documentation, "When the store fails after the
// handler ran"). It does not stop the middleware from serving: call it
// after http.Server.Shutdown has returned, so that no request can start
// new background work.
//
// It returns nil once nothing is pending, or, when ctx ends first, an error
// wrapping ctx.Err() that says how much was still pending. The pending work
// is then given up, after the store call under way (bounded by
// Config.StoreTimeout): a record not written leaves its key in flight until
// its lease ends, and the first retry after that runs the handler again; a
// release not written leaves its key blocked (409) until its lease ends.
// From then on, a record or release that fails within its request is not
// retried.
func (m *Middleware) Shutdown(ctx context.Context) error {
	idle, _ := m.bg.state()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		_, n := m.bg.state() // pending when it gives up
		m.bg.giveUp()
		if n == 0 {
			return nil
		}
		return fmt.Errorf("middleware: shutdown gave up on %d records or releases not yet written: %w", n, ctx.Err())
	}
}

// completeLater goes on trying to record rec for hold in the background,
// after the Complete within the request failed, until it is stored, the
// lease is lost or may have ended (rn's reckoning), or Shutdown gives up.
// The renewal goes on extending the lease for one more Config.Lease, no
// longer, so that a store that refuses the record for good (but extends
// leases) cannot block the key for ever: the background ends at most
// Lease + StoreLease after the handler returned. It stops rn when it ends.
func (m *Middleware) completeLater(ctx context.Context, hold *keystore.Hold, rec keystore.Record, rn *renewal) {
	m.later(ctx, hold, rn, "record", func(ctx context.Context) error {
		return m.store.Complete(ctx, hold.Key, hold.Token, rec, m.retention)
	})
}

// releaseLater goes on trying to release hold in the background, after the
// Release within the request failed, until it is released or the lease may
// have ended (after which the key is free anyway), or Shutdown gives up.
// The renewal is already stopped: extending a lease one is trying to give
// up would only keep the key blocked longer.
func (m *Middleware) releaseLater(ctx context.Context, hold *keystore.Hold, rn *renewal) {
	m.later(ctx, hold, rn, "release", func(ctx context.Context) error {
		return m.store.Release(ctx, hold.Key, hold.Token)
	})
}

func (m *Middleware) later(ctx context.Context, hold *keystore.Hold, rn *renewal, what string, op func(context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	quit := m.bg.quitting()
	if !m.bg.add() {
		rn.stop()
		m.log.LogAttrs(ctx, slog.LevelError, "idempotency "+what+" not written, and not retried: too much background work already (MaxBackground)",
			slog.String("key", hold.Key))
		return
	}
	renewFor := time.Now().Add(m.lease)
	go func() {
		defer m.bg.done()
		defer rn.stop()
		pause := firstPause
		for try := 2; ; try++ {
			if !time.Now().Before(renewFor) {
				rn.stop() // a store that refuses the record for good must not block the key for ever
			}
			until, ok := rn.held()
			if !ok {
				m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency "+what+" not written before the lease may have ended; given up",
					slog.String("key", hold.Key), slog.Int("tries", try-1))
				return
			}
			t := time.NewTimer(min(pause, time.Until(until)))
			select {
			case <-quit:
				t.Stop()
				m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency "+what+" not written; given up at shutdown",
					slog.String("key", hold.Key), slog.Int("tries", try-1))
				return
			case <-t.C:
			}
			pause = min(2*pause, maxPause, max(m.lease/6, time.Millisecond))
			if until, ok = rn.held(); !ok {
				continue // logged above
			}
			sctx, cancel := m.storeContext(ctx)
			sctx, cancel2 := context.WithDeadline(sctx, until) // no use of the token after the lease may have ended
			err := op(sctx)
			cancel2()
			cancel()
			switch {
			case err == nil:
				m.log.LogAttrs(ctx, slog.LevelInfo, "idempotency "+what+" written in the background",
					slog.String("key", hold.Key), slog.Int("tries", try))
				return
			case errors.Is(err, keystore.ErrLeaseLost):
				m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency "+what+" refused: the lease was lost",
					slog.String("key", hold.Key), slog.Int("tries", try))
				return
			}
		}
	}()
}
