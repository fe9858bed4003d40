package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/httpbody"
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

// serve is one request's path, top to bottom: its key, its headers and
// body, its identity, the claim, and what the claim found.
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	start := time.Now()
	fields := r.Header[m.keyHeader] // canonical (New), as net/http keys the fields it parses
	switch {
	case len(fields) == 0 && m.keyOptional:
		next.ServeHTTP(w, r)
		return
	case len(fields) == 0:
		m.reject(w, r, start, http.StatusBadRequest, ProblemMissingKey, "Idempotency key required",
			"This request must carry an "+m.keyHeader+" header; send the same key with every retry of it.")
		return
	case len(fields) > 1:
		m.reject(w, r, start, http.StatusBadRequest, ProblemMalformedKey, "Malformed idempotency key",
			"The request carries more than one "+m.keyHeader+" header.")
		return
	}
	key, err := ParseKey(fields[0])
	if err != nil {
		m.reject(w, r, start, http.StatusBadRequest, ProblemMalformedKey, "Malformed idempotency key",
			m.keyHeader+": "+strings.TrimPrefix(err.Error(), "middleware: ")+".")
		return
	}
	if m.refuseHeaders(w, r, start) {
		return
	}
	buf := getBody(r)
	defer func() { putBody(buf) }() // unless handed to the handler: see below
	var room []byte
	if buf != nil {
		room = buf.b
	}
	body, err := httpbody.ReadInto(room, r, m.maxBody)
	if errors.Is(err, httpbody.ErrTooLarge) {
		m.reject(w, r, start, http.StatusRequestEntityTooLarge, ProblemBodyTooLarge, "Request body too large",
			fmt.Sprintf("The request body is larger than %d bytes.", m.maxBody))
		return
	} else if err != nil {
		// The transport's fault (a ReadTimeout that cut a stalled upload, a
		// reset mid-upload), never the input's: transient.
		m.answer(w, r, start, Event{Outcome: Rejected}, http.StatusRequestTimeout, ProblemBodyUnreadable, "Request body unreadable",
			"The request body could not be read in full; nothing was claimed, so retry with the same key after Retry-After.", m.retryAfter)
		return
	}

	id := m.identify(r, key)
	fp := m.fingerprint(r, id, body)
	c, err := m.claim(r, id.stored, fp)
	switch {
	case errors.Is(err, keystore.ErrStoreFull):
		m.storeFull(w, r, id.stored, err, start)
	case err != nil:
		m.storeDown(w, r, id.stored, err, start)
	case !c.Acquired && c.Fingerprint != fp:
		m.answer(w, r, start, Event{Outcome: Mismatch, Key: id.stored}, http.StatusUnprocessableEntity, ProblemKeyReused, "Idempotency key reused",
			"This key was first used with a different request payload; use a new key for a new request.", 0)
	case c.State == keystore.InFlight && !c.Acquired:
		m.answer(w, r, start, Event{Outcome: InFlight, Key: id.stored}, http.StatusConflict, ProblemInFlight, "Request in flight",
			"A request with this key is still being processed; retry later with the same key to receive its response.", m.inFlightRetryAfter(c.LeaseRemaining))
	case c.State == keystore.Completed:
		status := m.replay(r.Context(), w, id.stored, c.Record)
		m.done(r.Context(), Event{Outcome: Replayed, Key: id.stored, Status: status}, start)
	case r.Context().Err() != nil:
		m.abandon(w, r, id.stored, c, start)
	default:
		x := &exchange{m: m, r: r, start: start, tookOver: c.TookOver, base: c.detached}
		// Field by field: x is new, and the Hold's zero fields stay so.
		x.hold.Key, x.hold.Token, x.hold.Retention, x.hold.MaxRecordBytes = id.stored, c.token, m.retention, m.maxRecord
		if x.base == nil { // memstore's: see claimed.detached
			x.detached.parent = r.Context()
			x.base = &x.detached
		}
		// The body's buffer goes back to the pool only once the handler
		// has returned (not when it panics), and never after a validator,
		// which may keep the bytes it is given.
		handed := buf
		buf = nil
		x.run(w, next, body, c.sent)
		if m.validator == nil {
			// Whatever the handler keeps of the body is a copy: it read
			// it from x.body. A read after its return, against net/http's
			// contract, finds the end of the body, not the bytes of the
			// request the buffer serves next.
			x.body.Reset(nil)
			putBody(handed)
		}
	}
}

// exchange is the state of one request that acquired its key, from the
// claim to the record, allocated in one piece.
type exchange struct {
	m        *Middleware
	r        *http.Request
	start    time.Time
	tookOver bool
	// base is the request's context without its cancellation: once the
	// key is claimed, the client's departure no longer ends the work. Every
	// store call after the claim, and the handler's context, derive from it.
	base context.Context
	// detached is base for memstore, which claims under the request's
	// own context (a store that can block claims under one detached
	// before the exchange exists).
	detached uncanceled
	hold     keystore.Hold
	// holdCtx is base carrying hold, the parent of the handler's context.
	holdCtx holdContext
	rec     hijacker
	body    bodyReader
	// room is where the exchange's one record or release within the
	// request makes its bounded context (a store that can block).
	room    deadlineRoom
	renewal renewal
	// req is the request the validator and the handler get: r under the
	// handler's context, copied here rather than allocated apart.
	req http.Request
	enc [512]byte // where rec encodes a small response
}

// ErrHandlerTimeout is the cause with which the handler's context ends
// when Config.HandlerTimeout has passed.
var ErrHandlerTimeout = errors.New("middleware: Config.HandlerTimeout passed")

// bodyReader is the request body the handler reads: the bytes the
// middleware has already read and fingerprinted.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// run runs the validator and the handler for the acquired key, renews the
// lease while they run (from sent, when the claim was sent), and records or
// releases afterwards.
func (x *exchange) run(w http.ResponseWriter, next http.Handler, body []byte, sent time.Time) {
	m := x.m
	x.rec = hijacker{recorder{w: w, allow: m.recordHeaders, trailerKeys: m.trailerKeys, limit: m.maxRecord}}
	x.rec.enc = x.enc[:0]
	rec := &x.rec.recorder
	// The handler's context ends only when the lease is lost or may have
	// ended (the renewal's cancel) or Config.HandlerTimeout passes, never
	// when the client leaves: see Config.HandlerTimeout.
	x.holdCtx = holdContext{x.base, &x.hold}
	ctx, cancel := context.WithCancelCause(&x.holdCtx)
	defer cancel(nil)
	x.renewal.start(m, x.base, &x.hold, cancel, sent)
	if m.handlerTime > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, m.handlerTime, ErrHandlerTimeout)
		defer stop()
	}
	x.req = *x.r.WithContext(ctx) // inlined: the copy WithContext makes stays on the stack
	r2 := &x.req
	x.body.Reset(body)
	r2.Body = &x.body
	r2.ContentLength = int64(len(body))

	// If the validator or the handler panics, settle the key (release it,
	// or record that the work was interrupted after its answer) and let
	// the panic go on to net/http's recovery.
	finished := false
	defer func() {
		if !finished {
			x.settlePanic()
		}
	}()
	var verr error
	if m.validator != nil {
		r2, verr = m.validate(r2, body)
	}
	if verr != nil {
		status, doc := problemOf(verr, ProblemInvalid, "Invalid request", http.StatusUnprocessableEntity)
		writeProblem(rec, status, doc, 0)
	} else {
		next.ServeHTTP(x.rec.writer(), r2)
	}
	finished = true
	// Nothing written is net/http's implicit 200, recorded like any other
	// answer, unless the lease was lost: then the key may be another's, and
	// the handler, stopped, may have done nothing.
	gaveUp := rec.status == 0 && rec.size == 0 && !rec.hijacked && errors.Is(context.Cause(ctx), keystore.ErrLeaseLost)
	if rec.status == 0 && !rec.hijacked {
		rec.snapshot() // headers set without a write are still sent
	}
	x.settle(verr, gaveUp)
}
