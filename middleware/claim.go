package middleware

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// claimed is what claim found: the store's answer, the token the Claim was
// sent with, when it was sent (an acquired lease may end at that time plus
// the store lease), and, for a store that can block, the request's context
// detached from its cancellation that the store was called under (nil for
// memstore, called under the request's own: see inProcess).
type claimed struct {
	keystore.Claim
	token    keystore.Token
	sent     time.Time
	detached context.Context
}

// claim claims key for r and, with WaitInFlight, waits for an in-flight
// original with the same fingerprint to finish. Each Claim carries a token
// of its own, chosen here (newToken), the request's client
// (Config.Client) and the room its record may need (MaxRecordBytes). The
// wait ends with the request's context.
func (m *Middleware) claim(r *http.Request, key string, fp keystore.Fingerprint) (claimed, error) {
	a := keystore.ClaimArgs{Fingerprint: fp, Lease: m.storeLease, RecordBytes: m.maxRecord}
	if m.client != nil {
		a.Client = m.client(r)
	}
	ctx := r.Context()
	var detached context.Context
	if !m.nonBlocking {
		detached = detach(ctx)
	}
	var deadline time.Time
	if m.waitInFlight > 0 {
		deadline = time.Now().Add(m.waitInFlight)
	}
	pause := 10 * time.Millisecond
	for {
		a.Token = newToken()
		sent := time.Now()
		c, err := m.claimOnce(ctx, detached, key, a, sent)
		out := claimed{Claim: c, token: a.Token, sent: sent, detached: detached}
		if err != nil || c.Acquired || c.State != keystore.InFlight || c.Fingerprint != fp {
			return out, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return out, nil
		}
		t := time.NewTimer(min(pause, left, c.LeaseRemaining))
		select {
		case <-ctx.Done():
			t.Stop()
			return out, nil
		case <-t.C:
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// tokenBatch is bytes from crypto/rand for the tokens of claims, read 64
// tokens at a time. Every request claims with a new token, first call or
// replay, and a crypto/rand.Read per token is a getrandom system call
// (about 300 ns) on a kernel without Linux 6.11's vDSO getrandom; a batch
// spreads one call over its tokens.
type tokenBatch struct {
	b   [64 * 8]byte
	off int // b[off:] is unused; b[:off] is cleared
}

var tokenBatches = sync.Pool{New: func() any { return &tokenBatch{off: 64 * 8} }}

// newToken returns a new claim token as keystore.NewToken does (63 random
// bits from crypto/rand, never zero), from a pooled batch: each byte makes
// one token only and is cleared once used.
func newToken() keystore.Token {
	tb := tokenBatches.Get().(*tokenBatch)
	for {
		if tb.off == len(tb.b) {
			_, _ = rand.Read(tb.b[:]) // crypto/rand.Read never fails (Go 1.24)
			tb.off = 0
		}
		next := tb.b[tb.off : tb.off+8]
		t := keystore.Token(binary.BigEndian.Uint64(next) >> 1)
		clear(next)
		tb.off += 8
		if t != 0 {
			tokenBatches.Put(tb)
			return t
		}
	}
}

// claimOnce sends one Claim, at sent.
//
// memstore, which never waits (inProcess), is called under the request's
// own context: it honours a context done before the call, and then (the
// conformance suite's canceled-context rule) changes nothing; once
// it has looked, it returns at once. So a claim refused because the client
// has just left is sent again, detached, as any claim once the request
// arrived: abandon then releases what it acquires.
//
// A store that can block is called under detached, the request's context
// detached from its cancellation (a claim canceled by a client that left
// may commit in the store while its reply is lost), bounded by
// Config.StoreTimeout. A
// Claim that fails may have acquired the key all the same, whatever ended
// it: a timeout, a connection reset, a batch that outlived the call. Its
// outcome is unknown, so the key is released in the background by the
// Claim's token (releaseUncertain): if the Claim acquired the key, the key
// is free again; if it did not, or has not yet, the Release fences the
// token and the store keeps it from ever acquiring the key (see package
// keystore, "Claims whose outcome is unknown"). Only a refusal the store
// makes before acting (ErrStoreFull, ErrInvalidClaim) needs no release.
func (m *Middleware) claimOnce(ctx, detached context.Context, key string, a keystore.ClaimArgs, sent time.Time) (keystore.Claim, error) {
	if m.nonBlocking {
		c, err := m.callClaim(ctx, key, a)
		if cerr := ctx.Err(); err != nil && cerr != nil && errors.Is(err, cerr) {
			c, err = m.callClaim(context.WithoutCancel(ctx), key, a)
		}
		return c, err
	}
	c, err := m.callClaim(detached, key, a)
	if err != nil && !errors.Is(err, keystore.ErrStoreFull) && !errors.Is(err, keystore.ErrInvalidClaim) {
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency claim failed and may have acquired its key; releasing it by its token in the background",
			slog.String("key", key), slog.Any("error", err))
		m.releaseUncertain(detached, key, a.Token, sent)
	}
	return c, err
}

// abandon releases at once a key acquired for a request whose context was
// done before its claim returned (the client left, or the server gave up):
// the handler does not run, and a retry finds the key free rather than in
// flight for the whole lease. A release that fails is retried in the
// background, as after a handler's 5xx, while the lease holds: counted
// from when the claim was sent, not from when the request arrived, which
// may be a long upload earlier.
func (m *Middleware) abandon(w http.ResponseWriter, r *http.Request, key string, c claimed, start time.Time) {
	hold := &keystore.Hold{Key: key, Token: c.token, Retention: m.retention}
	rn := new(renewal)
	rn.fixed(m, hold, c.sent)
	detached := c.detached
	if detached == nil {
		detached = context.WithoutCancel(r.Context())
	}
	m.release(detached, hold, rn, nil)
	m.answer(w, r, start, Event{Outcome: Canceled, Key: key, TookOver: c.TookOver, Err: context.Cause(r.Context())},
		http.StatusServiceUnavailable, ProblemStoreDown, "Idempotency store unavailable",
		"The request was canceled before it ran; it was not executed, so retry with the same key.", m.retryAfter)
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
