package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// outcomeHeader marks the record of a key held as uncertain: an operator's
// tools (geoidem keys) and a sender read it; the middleware replays it.
const (
	outcomeHeader    = "Geoidem-Outcome"
	outcomeUncertain = "uncertain"
)

// uncertain holds the keys whose upstream outcome is unknown: the request
// was sent, and no answer can be trusted. The upstream may have done the
// work, so the key is never released as though nothing ran: it is completed
// with a record that says so, 503 upstream-uncertain with a Retry-After
// that is the end of the hold, for as long as hold; every retry is
// answered that record, and nothing runs again until an operator releases
// the key (geoidem keys release, after checking the upstream) or the hold
// ends. With hold 0 (an upstream that deduplicates by the forwarded
// Idempotency-Key, so that running again is safe), the key is released at
// once instead and the sender's retry runs.
type uncertain struct {
	store      keystore.Store
	hold       time.Duration
	retryAfter time.Duration // with hold 0
	timeout    time.Duration // each store call
	metrics    *metrics
	log        *slog.Logger
}

// answer answers r, whose outcome at the upstream is unknown for why.
func (u *uncertain) answer(w http.ResponseWriter, r *http.Request, why string, d time.Duration) {
	u.metrics.upstreamCall(resultUncertain, d)
	h, ok := middleware.HoldFromContext(r.Context())
	if u.hold <= 0 || !ok {
		u.log.LogAttrs(r.Context(), slog.LevelWarn, "upstream outcome uncertain; key released (-uncertain-hold 0): the upstream must deduplicate by Idempotency-Key", heldKey(r), slog.String("why", why))
		writeProblem(w, http.StatusServiceUnavailable, u.retryAfter, problemUpstreamUncertain, "Upstream outcome unknown",
			"The request reached the receiver behind this proxy, which gave no answer to trust ("+why+"); the key is released and a retry with it runs again.")
		return
	}
	until := time.Now().Add(u.hold).Truncate(time.Second).Add(time.Second)
	header := http.Header{
		"Content-Type":  {"application/problem+json"},
		"Cache-Control": {"no-store"},
		"Retry-After":   {until.UTC().Format(http.TimeFormat)},
		outcomeHeader:   {outcomeUncertain},
	}
	body := problem.Details{Type: problemUpstreamUncertain, Title: "Upstream outcome unknown", Status: http.StatusServiceUnavailable,
		Detail: "The request reached the receiver behind this proxy, which gave no answer to trust (" + why + "): it may have done the work. " +
			"The key is held until an operator checks the receiver and releases it, or until Retry-After; a retry before then is answered this again."}.ProblemJSON()
	rec := record.Record{StatusCode: http.StatusServiceUnavailable, Header: header, Body: body}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), u.timeout)
	err := h.Commit(func() error {
		return u.store.Complete(ctx, h.Key, h.Token, record.Append(nil, record.Fit(h.MaxRecordBytes, rec)), u.hold)
	})
	cancel()
	if err != nil {
		// Never released either way: the key stays in flight until its
		// lease runs out in the store, then the next delivery runs.
		h.MarkCompleted()
		u.metrics.unrecorded.add()
		u.log.LogAttrs(r.Context(), slog.LevelError, "upstream outcome uncertain and the store would not record it; the key is held only until its lease runs out",
			heldKey(r), slog.String("why", why), slog.Any("error", err))
	} else {
		u.metrics.held.add()
		u.log.LogAttrs(r.Context(), slog.LevelWarn, "upstream outcome uncertain; key held: check the upstream, then `geoidem keys release -stored-key` it to run again",
			heldKey(r), slog.String("why", why), slog.Time("held_until", until))
	}
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.StatusCode)
	_, _ = w.Write(body)
}

// isUncertain reports whether enc, a record's bytes, is an uncertain
// outcome's record.
func isUncertain(enc []byte) bool {
	rec, err := record.Decode(enc)
	return err == nil && strings.EqualFold(rec.Header.Get(outcomeHeader), outcomeUncertain)
}

// writeProblem writes a problem document, with Retry-After when retryAfter
// is positive.
func writeProblem(w http.ResponseWriter, status int, retryAfter time.Duration, typ, title, detail string) {
	problem.Write(w, problem.Details{Type: typ, Title: title, Status: status, Detail: detail, RetryAfter: retryAfter})
}
