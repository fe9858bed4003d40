package middleware

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/problem"
)

// The answers the middleware writes itself, each an RFC 9457 problem
// document, each reported once (done).

// answer writes a problem of type typ and reports ev with its status.
func (m *Middleware) answer(w http.ResponseWriter, r *http.Request, start time.Time, ev Event, status int, typ, title, detail string, retryAfter time.Duration) {
	writeProblem(w, status, problemJSON(typ, title, status, detail), retryAfter)
	ev.Status = status
	m.done(r.Context(), ev, start)
}

// reject answers a request refused before anything was claimed.
func (m *Middleware) reject(w http.ResponseWriter, r *http.Request, start time.Time, status int, typ, title, detail string) {
	m.answer(w, r, start, Event{Outcome: Rejected}, status, typ, title, detail, 0)
}

// storeDown answers a claim the store failed: 503 store-unavailable, the
// handler not run.
func (m *Middleware) storeDown(w http.ResponseWriter, r *http.Request, key string, err error, start time.Time) {
	m.refusals.Warn(r.Context(), "idempotency store unavailable", slog.String("key", key), slog.Any("error", err))
	m.answer(w, r, start, Event{Outcome: StoreError, Key: key, Err: err}, http.StatusServiceUnavailable, ProblemStoreDown, "Idempotency store unavailable",
		"The request was not executed; retry later with the same key.", m.retryAfter)
}

// storeFull answers a claim the store refused for want of room, with a
// Retry-After from when the store says room frees up (keystore.FullError),
// at least Config.RetryAfter: 503 store-full when the store is full, 429
// client-full (Outcome Limited) when the claim's client is past its own
// bound, which is the client's doing and no failure of the server's.
func (m *Middleware) storeFull(w http.ResponseWriter, r *http.Request, key string, err error, start time.Time) {
	retryAfter := m.retryAfter
	var fe *keystore.FullError
	if errors.As(err, &fe) {
		retryAfter = max(retryAfter, fe.RetryAfter)
	}
	if fe != nil && fe.Client {
		m.refusals.Warn(r.Context(), "idempotency client past its bound", slog.String("key", key), slog.Any("error", err))
		m.answer(w, r, start, Event{Outcome: Limited, Key: key, Err: err}, http.StatusTooManyRequests, ProblemClientFull, "Client's bound on new idempotency keys reached",
			"This client has claimed as many new keys as the idempotency store allows it for now; the request was not executed. Retry after Retry-After with the same key.", retryAfter)
		return
	}
	m.refusals.Warn(r.Context(), "idempotency store full", slog.String("key", key), slog.Any("error", err))
	m.answer(w, r, start, Event{Outcome: StoreError, Key: key, Err: err}, http.StatusServiceUnavailable, ProblemStoreFull, "Idempotency store full",
		"The idempotency store has no room for a new key now; the request was not executed. Retry after Retry-After with the same key.", retryAfter)
}

// problemJSON renders a problem document of the middleware's own.
func problemJSON(typ, title string, status int, detail string) []byte {
	return problem.Details{Type: typ, Title: title, Status: status, Detail: detail}.ProblemJSON()
}

// problemHeader is the header a recorded problem document is replayed with.
func problemHeader() http.Header {
	return http.Header{"Content-Type": {problem.MediaType}, "Cache-Control": {"no-store"}}
}

// writeProblem answers status with doc, a problem document already
// rendered (the middleware's own, or a Validator's HTTPProblem), as
// problem.Write answers a problem.Details: not to be cached, without the
// handler's Content-Length, with the other headers set before it, and
// with Retry-After in whole seconds rounded up when retryAfter is
// positive.
func writeProblem(w http.ResponseWriter, status int, doc []byte, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", problem.MediaType)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if retryAfter > 0 {
		h.Set("Retry-After", answer.FormatRetryAfter(retryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(doc)
}
