package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// The problem types the ingest service answers with, listed in
// docs/problems.md. Every error it writes is one of these, the
// middleware's, or package geojson's: never about:blank.
const (
	problemIDMissing        = middleware.ProblemTypeBase + "feature-id-missing"        // 422
	problemNotFeatures      = middleware.ProblemTypeBase + "not-features"              // 422
	problemRejected         = middleware.ProblemTypeBase + "feature-rejected"          // 422, permanent
	problemStoreUnavailable = middleware.ProblemTypeBase + "feature-store-unavailable" // 503, transient
	problemStoreFull        = middleware.ProblemTypeBase + "feature-store-full"        // 507: room does not free by itself
	problemNotFound         = middleware.ProblemTypeBase + "feature-not-found"         // 404
	problemBodyUnreadable   = middleware.ProblemBodyUnreadable                         // 400
)

// writeProblem answers an RFC 9457 problem document, not to be cached; a
// positive retryAfter adds Retry-After in whole seconds, rounded up.
func writeProblem(w http.ResponseWriter, status int, typ, title, detail string, retryAfter time.Duration) {
	problem.Write(w, problem.Details{Type: typ, Title: title, Status: status, Detail: detail, RetryAfter: retryAfter})
}

// writeHTTPProblem answers an error that carries its own problem document
// (package geojson's), or a 422 feature-rejected one.
func writeHTTPProblem(w http.ResponseWriter, err error) {
	var hp middleware.HTTPProblem
	if !errors.As(err, &hp) {
		writeProblem(w, http.StatusUnprocessableEntity, problemRejected, "Features refused", err.Error(), 0)
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(hp.HTTPStatus())
	_, _ = w.Write(hp.ProblemJSON())
}

// marshal is json.Marshal without HTML escaping: ids go out as they are,
// not six times their size.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
