package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/httpbody"
	"github.com/geoidem/geoidem/internal/problem"
	"github.com/geoidem/geoidem/keystore"
)

// Handler wraps next so that each covered request runs it at most once per
// key: see the package documentation for every answer it gives.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.methods[r.Method] && !m.methods[strings.ToUpper(r.Method)] {
			next.ServeHTTP(w, r)
			return
		}
		m.serve(w, r, next)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	start := time.Now()
	reject := func(status int, typ, title, detail string) {
		problem.Write(w, status, problem.JSON(problem.Doc{Type: typ, Title: title, Status: status, Detail: detail}), 0)
		m.done(r.Context(), Event{Outcome: Rejected, Status: status}, start)
	}

	fields := r.Header.Values(m.keyHeader)
	switch {
	case len(fields) == 0 && m.keyOptional:
		next.ServeHTTP(w, r)
		return
	case len(fields) == 0:
		reject(http.StatusBadRequest, ProblemMissingKey, "Idempotency key required",
			"This request must carry an "+m.keyHeader+" header; send the same key with every retry of it.")
		return
	case len(fields) > 1:
		reject(http.StatusBadRequest, ProblemMalformedKey, "Malformed idempotency key",
			"The request carries more than one "+m.keyHeader+" header.")
		return
	}
	key, err := ParseKey(fields[0])
	if err != nil {
		reject(http.StatusBadRequest, ProblemMalformedKey, "Malformed idempotency key", m.keyHeader+": "+strings.TrimPrefix(err.Error(), "middleware: ")+".")
		return
	}

	if m.refuseHeaders(w, r, start) {
		return
	}
	body, err := httpbody.Read(r, m.maxBody)
	if errors.Is(err, httpbody.ErrTooLarge) {
		reject(http.StatusRequestEntityTooLarge, ProblemBodyTooLarge, "Request body too large",
			fmt.Sprintf("The request body is larger than %d bytes.", m.maxBody))
		return
	} else if err != nil {
		reject(http.StatusBadRequest, ProblemBodyUnreadable, "Request body unreadable",
			"The request body could not be read in full; nothing was claimed, so retry with the same key.")
		return
	}

	path := NormalizedPath(r) // one identity for every spelling ServeMux routes alike
	var storeKey string
	if m.scope == nil { // the default scope, without building its string
		storeKey = storeKey3(r.Method, " ", path, key)
	} else {
		storeKey = StoreKey(m.scope(r), key)
	}
	fp := m.fingerprint(r, path, body)
	// storeClaim detaches the claim of a store that can block from the
	// request's cancellation; the exchange is allocated only when the key
	// is acquired: a replay needs none.
	sctx := r.Context()
	if m.client != nil {
		sctx = keystore.ContextWithClient(sctx, m.client(r))
	}
	claim, sent, err := m.claim(r.Context(), sctx, storeKey, fp)
	if errors.Is(err, keystore.ErrStoreFull) {
		m.storeFull(w, r, storeKey, err, start)
		return
	}
	if err != nil {
		problem.Write(w, http.StatusServiceUnavailable, problem.JSON(problem.Doc{Type: ProblemStoreDown, Title: "Idempotency store unavailable", Status: http.StatusServiceUnavailable,
			Detail: "The request was not executed; retry later with the same key."}), m.retryAfter)
		m.refusals.Warn(r.Context(), "idempotency store unavailable", slog.String("key", storeKey), slog.Any("error", err))
		m.done(r.Context(), Event{Outcome: StoreError, Key: storeKey, Status: http.StatusServiceUnavailable, Err: err}, start)
		return
	}

	if claim.State != keystore.Acquired && claim.Fingerprint != fp {
		status := http.StatusUnprocessableEntity
		problem.Write(w, status, problem.JSON(problem.Doc{Type: ProblemKeyReused, Title: "Idempotency key reused", Status: status,
			Detail: "This key was first used with a different request payload; use a new key for a new request."}), 0)
		m.done(r.Context(), Event{Outcome: Mismatch, Key: storeKey, Status: status}, start)
		return
	}
	if claim.State == keystore.Acquired && r.Context().Err() != nil {
		m.abandon(w, r, storeKey, claim, sent, start)
		return
	}
	switch claim.State {
	case keystore.InFlight:
		problem.Write(w, http.StatusConflict, problem.JSON(problem.Doc{Type: ProblemInFlight, Title: "Request in flight", Status: http.StatusConflict,
			Detail: "A request with this key is still being processed; retry later with the same key to receive its response."}), m.inFlightRetryAfter(claim.LeaseRemaining))
		m.done(r.Context(), Event{Outcome: InFlight, Key: storeKey, Status: http.StatusConflict}, start)
		return
	case keystore.Completed:
		status := m.replay(r.Context(), w, storeKey, claim.Record)
		m.done(r.Context(), Event{Outcome: Replayed, Key: storeKey, Status: status}, start)
		return
	}
	m.execute(&exchange{base: detached{parent: r.Context()}}, w, r, next, body, storeKey, claim, sent, start)
}

// exchange is the state of one request that acquired its key, allocated
// in one piece.
type exchange struct {
	base    detached // for the store's calls
	held    holding  // for the handler: base with the hold
	hold    keystore.Hold
	rec     hijacker
	body    bodyReader
	renewal renewal
	enc     [512]byte // where rec encodes a small response
}

// detached is the request's context without its cancellation, as
// context.WithoutCancel, but allocated with the exchange: once the key is
// claimed, the client's departure (or a server that closes its
// connection) no longer ends the handler's context. Only the handler's
// own context, derived from it with a cancel of the middleware's, is
// handed out, and that one answers context.Cause itself.
type detached struct{ parent context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detached) Done() <-chan struct{}       { return nil }
func (*detached) Err() error                  { return nil }
func (d *detached) Value(key any) any         { return d.parent.Value(key) }

// holding is a detached context that also carries a hold, as
// keystore.ContextWithHold would, without a context of its own.
type holding struct {
	detached
	hold *keystore.Hold
}

func (h *holding) Value(key any) any {
	if key == holdKey {
		return h.hold
	}
	return h.parent.Value(key)
}

// holdKey is the context key keystore.ContextWithHold uses, learned once
// by asking keystore.HoldFromContext (keyProbe records what it is asked).
var holdKey = func() any {
	var p keyProbe
	keystore.HoldFromContext(&p)
	return p.key
}()

type keyProbe struct {
	detached
	key any
}

func (p *keyProbe) Value(key any) any { p.key = key; return nil }

// ErrHandlerTimeout is the cause with which the handler's context ends
// when Config.HandlerTimeout has passed.
var ErrHandlerTimeout = errors.New("middleware: Config.HandlerTimeout passed")

// bodyReader is the request body the handler reads: the bytes the
// middleware has already read and fingerprinted.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// execute runs the validator and the handler for an acquired claim, renews
// the lease while they run, and records or releases afterwards.
func (m *Middleware) execute(x *exchange, w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, key string, claim keystore.Claim, sent, start time.Time) {
	x.hold = keystore.Hold{Key: key, Token: claim.Token, Retention: m.retention}
	x.rec = hijacker{recorder{w: w, allow: m.recordHeaders, trailerKeys: m.trailerKeys, limit: m.maxRecord, encode: m.encoded != nil}}
	x.rec.enc = x.enc[:0]
	hold, rec := &x.hold, &x.rec.recorder
	rw := x.rec.writer()
	// The handler's context ends only when the lease is lost or may have
	// ended (the renewal's cancel) or Config.HandlerTimeout passes, never
	// when the client leaves: see Config.HandlerTimeout.
	x.held = holding{detached: x.base, hold: hold}
	ctx, cancel := context.WithCancelCause(&x.held)
	defer cancel(nil)
	x.renewal.start(m, ctx, hold, cancel, sent)
	if m.handlerTime > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, m.handlerTime, ErrHandlerTimeout)
		defer stop()
	}

	r2 := r.WithContext(ctx)
	x.body.Reset(body)
	r2.Body = &x.body
	r2.ContentLength = int64(len(body))

	// If the validator or the handler panics before a final answer that is
	// not retryable was sent, release the claim, so that a retry can run
	// again; after such an answer, the work is done: record that it was
	// interrupted, never release. Either way the panic goes on to
	// net/http's recovery.
	finished := false
	defer func() {
		if !finished {
			m.settlePanic(r.Context(), hold, &x.renewal, rec, claim.TookOver, start)
		}
	}()

	outcome := Executed
	var verr error
	if m.validator != nil {
		r2, verr = m.validate(r2, body)
	}
	if verr != nil {
		outcome = Invalid
		status, doc := problemOf(verr, problem.Doc{Type: ProblemInvalid, Title: "Invalid request", Status: http.StatusUnprocessableEntity})
		problem.Write(rec, status, doc, 0)
		rec.keepNoStore()
	} else {
		next.ServeHTTP(rw, r2)
	}
	finished = true
	// The renewal goes on until the response is recorded or released: if
	// the store fails now, the record is retried in the background under
	// the same lease.
	// Nothing written is net/http's implicit 200, recorded like any other
	// answer, unless the lease was lost: then the key may be another's, and
	// the handler, stopped, may have done nothing.
	gaveUp := rec.status == 0 && rec.size == 0 && !rec.hijacked && errors.Is(context.Cause(ctx), keystore.ErrLeaseLost)
	if rec.status == 0 && !rec.hijacked {
		rec.snapshot() // headers set without a write are still sent
	}

	ev := Event{Outcome: outcome, Key: key, Status: rec.finalStatus(), TookOver: claim.TookOver, Err: verr, ClockStep: x.renewal.step()}
	switch {
	case hold.Completed():
		// The handler recorded its response itself, in its own transaction.
		x.renewal.stop()
	case gaveUp:
		// The handler returned without a word because its lease was lost:
		// the store would refuse the record anyway; release in case it
		// did no work, so that a retry runs it again.
		ev.Outcome = Released
		m.release(&x.base, hold, &x.renewal)
	case retryable(ev.Status) && rec.replayable():
		ev.Outcome = Released
		m.release(&x.base, hold, &x.renewal)
	case verr != nil:
		// The validator's answer has no side effect and depends on the
		// body alone: the same body gets the same answer again, so it is
		// not recorded. Kept, it would let a small body fill the store
		// with a large answer for the whole retention.
		m.release(&x.base, hold, &x.renewal)
	default:
		m.record(&x.base, hold, &x.renewal, rec.record(), &ev)
	}
	m.done(r.Context(), ev, start)
}

// storeFull answers a claim the store refused for want of room: 503
// store-full, with a Retry-After from when the store says room frees up
// (keystore.FullError), at least Config.RetryAfter.
func (m *Middleware) storeFull(w http.ResponseWriter, r *http.Request, key string, err error, start time.Time) {
	retryAfter := m.retryAfter
	detail := "The idempotency store has no room for a new key now; the request was not executed. Retry after Retry-After with the same key."
	var fe *keystore.FullError
	if errors.As(err, &fe) {
		retryAfter = max(retryAfter, fe.RetryAfter)
		if fe.Client {
			detail = "This client's share of the idempotency store is full; the request was not executed. Retry after Retry-After with the same key."
		}
	}
	problem.Write(w, http.StatusServiceUnavailable, problem.JSON(problem.Doc{Type: ProblemStoreFull, Title: "Idempotency store full", Status: http.StatusServiceUnavailable,
		Detail: detail}), retryAfter)
	m.refusals.Warn(r.Context(), "idempotency store full", slog.String("key", key), slog.Any("error", err))
	m.done(r.Context(), Event{Outcome: StoreError, Key: key, Status: http.StatusServiceUnavailable, Err: err}, start)
}

// detach returns ctx without its cancellation: ctx itself when it is the
// exchange's detached context already, else context.WithoutCancel(ctx).
func detach(ctx context.Context) context.Context {
	if d, ok := ctx.(*detached); ok {
		return d
	}
	return context.WithoutCancel(ctx)
}
