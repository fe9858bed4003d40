package service

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/newest"
	"github.com/geoidem/geoidem/problem"
)

// postFeatures is the ingest handler, behind the middleware. It works from
// the document the validator decoded (middleware.Decoded): no second read
// of the body and no second parse. What it answers the middleware records
// (and replays to every retry), except a 5xx: then the key is released and
// the sender's retry runs it again.
func (s *Service) postFeatures(w http.ResponseWriter, r *http.Request) {
	doc, ok := middleware.Decoded[*geojson.Document](r.Context())
	if !ok {
		// A Config.Validator that does not decode: parse here, with the
		// same strict parser.
		body, err := io.ReadAll(r.Body) // bounded by the middleware
		if err != nil {
			problem.Write(w, problem.Details{Type: problemBodyUnreadable, Title: "Body unreadable", Status: http.StatusRequestTimeout, Detail: err.Error(), RetryAfter: s.retryAfter})
			return
		}
		if doc, err = geojson.DecodeDocument(body, geojson.Options{}); err != nil {
			writeError(w, err)
			return
		}
	}
	fs, refusal := featuresOf(doc, s.orderProperty, s.policy)
	if refusal != nil {
		problem.Write(w, *refusal)
		return
	}
	var verdicts []newest.Verdict
	hold, _ := middleware.HoldFromContext(r.Context())
	rec, err := s.features.Upsert(r.Context(), hold, fs, func(v []newest.Verdict) Answer {
		verdicts = v
		return answerFor(fs, v)
	})
	var refused *RefusedError
	var conflict *ConflictError
	switch {
	case err == nil:
	case errors.As(err, &conflict):
		// Other rows' state, which another write can lift: released (a
		// 409 with Retry-After), so that the sender's retry, same key and
		// bytes, runs again.
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "features in conflict with other rows; the sender will retry", heldKey(r), slog.Any("error", err))
		problem.Write(w, problem.Details{Type: problemConflict, Title: "Features in conflict", Status: http.StatusConflict,
			Detail: "The feature store refused the features for the state of other data, which another write can change; nothing was stored. " +
				"Send the same request again, same key, after Retry-After.",
			Errors: []problem.Error{{Pointer: featurePointer(doc.Type, conflict.Index, conflict.Pointer), Detail: conflict.Detail}}, RetryAfter: s.retryAfter})
		return
	case errors.As(err, &refused):
		// The features' own fault: recorded, so every retry is answered
		// the same, and the sender stops.
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "features refused; answered 422 and recorded", heldKey(r), slog.Any("error", err))
		problem.Write(w, problem.Details{Type: problemRejected, Title: "Features refused", Status: http.StatusUnprocessableEntity,
			Detail: "The feature store refused the features for good; nothing was stored.",
			Errors: []problem.Error{{Pointer: featurePointer(doc.Type, refused.Index, refused.Pointer), Detail: refused.Detail}}})
		return
	case errors.Is(err, ErrStoreFull):
		// The in-memory store evicts nothing, so no room frees by itself:
		// no Retry-After that would promise some. 507 is a 5xx, so the
		// key is released, and the paired sender retries it with its
		// backoff, for an operator to make room meanwhile.
		problem.Write(w, problem.Details{Type: problemStoreFull, Title: "Feature store full", Status: http.StatusInsufficientStorage,
			Detail: "The in-memory feature store is full and evicts nothing, so no room frees by itself; nothing was stored. Retry with the same key once the operator has made room (a larger -max-features or -max-feature-bytes, or a restart)."})
		return
	default:
		// Anything else is transient, known or not: a
		// 5xx releases the key, so the sender's retry runs again; an error
		// that stays makes the sender dead-letter the event as retryable.
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "features not stored; the sender will retry", heldKey(r), slog.Any("error", err))
		problem.Write(w, problem.Details{Type: problemStoreUnavailable, Title: "Feature store unavailable", Status: http.StatusServiceUnavailable,
			Detail: "The feature store failed; nothing was stored. Retry later with the same key.", RetryAfter: s.retryAfter})
		return
	}
	s.count(verdicts)
	for k, vs := range rec.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.StatusCode)
	_, _ = w.Write(rec.Body)
}

// count adds the verdicts of a committed write to geoidem_features_total.
func (s *Service) count(verdicts []newest.Verdict) {
	var n [3]float64 // stored, stale, unstamped
	for _, v := range verdicts {
		switch v {
		case newest.Replace:
			n[0]++
		case newest.Unstamped:
			n[2]++
		default:
			n[1]++
		}
	}
	for i, c := range s.counts {
		if n[i] > 0 {
			c.Add(n[i])
		}
	}
}

// heldKey is the request's stored key (a hash, never the raw key) for logs.
func heldKey(r *http.Request) slog.Attr {
	if hold, ok := middleware.HoldFromContext(r.Context()); ok {
		return slog.String("key", hold.Key)
	}
	return slog.String("key", "")
}

func (s *Service) getFeature(w http.ResponseWriter, r *http.Request) {
	f, ok, err := s.features.Get(r.Context(), r.PathValue("id"))
	switch {
	case err != nil:
		problem.Write(w, problem.Details{Type: problemStoreUnavailable, Title: "Feature store unavailable", Status: http.StatusServiceUnavailable,
			Detail: "The feature store failed; try again later.", RetryAfter: time.Second})
	case !ok:
		problem.Write(w, problem.Details{Type: problemNotFound, Title: "No such feature", Status: http.StatusNotFound,
			Detail: "No feature has the id " + strconv.Quote(r.PathValue("id")) + "."})
	default:
		w.Header().Set("Content-Type", "application/geo+json")
		_, _ = w.Write(f)
	}
}

// featurePointer is the JSON pointer, in a request of type typ, of pointer
// within its feature index (-1: the request as a whole).
func featurePointer(typ string, index int, pointer string) string {
	if index >= 0 && typ == "FeatureCollection" {
		return "/features/" + strconv.Itoa(index) + pointer
	}
	return pointer
}
