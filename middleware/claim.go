package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/problem"
	"github.com/geoidem/geoidem/keystore"
)

// claim claims key, and, with WaitInFlight, waits for an in-flight original
// with the same fingerprint to finish. It also returns when the last Claim
// was sent: an acquired lease may end at that time plus the lease. The
// wait ends with ctx (the request's); the store is called under sctx,
// the request's context detached from its cancellation.
func (m *Middleware) claim(ctx, sctx context.Context, key string, fp keystore.Fingerprint) (keystore.Claim, time.Time, error) {
	var deadline time.Time
	if m.waitInFlight > 0 {
		deadline = time.Now().Add(m.waitInFlight)
	}
	pause := 10 * time.Millisecond
	for {
		sent := time.Now()
		c, err := m.storeClaim(sctx, key, fp)
		if err != nil || c.State != keystore.InFlight || c.Fingerprint != fp {
			return c, sent, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return c, sent, nil
		}
		t := time.NewTimer(min(pause, left, c.LeaseRemaining))
		select {
		case <-ctx.Done():
			t.Stop()
			return c, sent, nil
		case <-t.C:
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// storeClaim runs one Claim under ctx's values, not its cancellation, for
// a store that can block (for a NonBlocking store, under ctx itself: see
// below), bounded by Config.StoreTimeout: a claim canceled by a client that left
// may commit in the store while its reply is lost, leaving the key in
// flight for the whole lease. See abandon for what follows.
//
// A Claim that times out may have acquired the key all the same. So, for a
// store that can block, the middleware chooses the claim's token itself
// (keystore.ContextWithClaimToken) before sending it, and after a timeout
// releases the key with that token in the background (releaseUncertain):
// every retry would otherwise meet 409 for the whole lease.
func (m *Middleware) storeClaim(ctx context.Context, key string, fp keystore.Fingerprint) (keystore.Claim, error) {
	if m.nonBlocking {
		// A NonBlocking store may be called under the request's own
		// context: it honours a context done before the call, and then
		// (keystore.NonBlocking, and the conformance suite's canceled-context
		// rule) changes nothing; once it has looked, it returns at once.
		// So a claim refused because the client has just left is sent
		// again, detached, as any claim once the request arrived: abandon
		// then releases what it acquires.
		c, err := m.store.Claim(ctx, key, fp, m.storeLease)
		if cerr := ctx.Err(); err != nil && cerr != nil && errors.Is(err, cerr) {
			c, err = m.store.Claim(context.WithoutCancel(ctx), key, fp, m.storeLease)
		}
		return c, err
	}
	sent := time.Now()
	tok := keystore.NewClaimToken()
	sctx, cancel := m.claimContext(ctx, tok)
	defer cancel()
	c, err := m.store.Claim(sctx, key, fp, m.storeLease)
	if err != nil && sctx.Err() != nil {
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency claim timed out and may have acquired its key; releasing it in the background",
			slog.String("key", key), slog.Any("error", err))
		m.releaseUncertain(ctx, key, tok, sent)
	}
	return c, err
}

// abandon releases at once a key acquired for a request whose context was
// done before its claim returned (the client left, or the server gave up):
// the handler does not run, and a retry finds the key free rather than in
// flight for the whole lease. A release that fails is retried in the
// background, as after a handler's 5xx, while the lease holds: counted
// from when the claim was sent (sent), not from when the request arrived,
// which may be a long upload earlier.
func (m *Middleware) abandon(w http.ResponseWriter, r *http.Request, key string, claim keystore.Claim, sent, start time.Time) {
	hold := &keystore.Hold{Key: key, Token: claim.Token, Retention: m.retention}
	rn := new(renewal)
	rn.start(m, r.Context(), hold, func(error) {}, sent)
	m.release(r.Context(), hold, rn)
	problem.Write(w, http.StatusServiceUnavailable, problem.JSON(problem.Doc{Type: ProblemStoreDown, Title: "Idempotency store unavailable", Status: http.StatusServiceUnavailable,
		Detail: "The request was canceled before it ran; it was not executed, so retry with the same key."}), m.retryAfter)
	m.done(r.Context(), Event{Outcome: Canceled, Key: key, Status: http.StatusServiceUnavailable, TookOver: claim.TookOver, Err: context.Cause(r.Context())}, start)
}

// inFlightRetryAfter is the Retry-After of a 409: what the store knows,
// the holder's remaining lease, capped at Lease/6 and never below
// Config.RetryAfter. A holder that is alive renews its lease, so its
// remaining lease says little and the cap keeps the wait short; a holder
// that is gone (a crash, a release that failed) frees the key when its
// lease ends, and the sender comes back about then rather than polling.
func (m *Middleware) inFlightRetryAfter(remaining time.Duration) time.Duration {
	return max(m.retryAfter, min(remaining, m.lease/6))
}

// storeContext bounds one store operation by Config.StoreTimeout, unless
// the store is keystore.NonBlocking and needs no bound. Under a parent
// that is never canceled (the usual case: store calls are detached from
// the client) the bound comes from m.deadlines, one shared timer.
func (m *Middleware) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.nonBlocking {
		return ctx, nop
	}
	if ctx.Done() == nil && m.storeTimeout >= minBucketed {
		return m.deadlines.bound(ctx, m.storeTimeout), nop
	}
	return context.WithTimeout(ctx, m.storeTimeout)
}

// storeContextUntil is storeContext(ctx) ending at until if that is
// sooner: one context, where storeContext's and a deadline derived from
// it would be two (and, under a shared deadline, a goroutine watching it).
func (m *Middleware) storeContextUntil(ctx context.Context, until time.Time) (context.Context, context.CancelFunc) {
	if !m.nonBlocking {
		until = minTime(until, time.Now().Add(m.storeTimeout))
	}
	return context.WithDeadline(ctx, until)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// claimContext is storeContext(keystore.ContextWithClaimToken(context.WithoutCancel(ctx), tok)),
// in one allocation when it can.
func (m *Middleware) claimContext(ctx context.Context, tok keystore.Token) (context.Context, context.CancelFunc) {
	if m.storeTimeout < minBucketed {
		return context.WithTimeout(keystore.ContextWithClaimToken(context.WithoutCancel(ctx), tok), m.storeTimeout)
	}
	c := m.deadlines.bound(ctx, m.storeTimeout)
	c.token = tok
	return c, nop
}
