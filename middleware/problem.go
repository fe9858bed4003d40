package middleware

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ProblemTypeBase is the prefix of the type URI of every problem document
// the middleware writes; the fragment names the problem.
const ProblemTypeBase = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#"

// The problem types the middleware answers with. Each is ProblemTypeBase
// followed by its name, stable across releases.
const (
	ProblemMissingKey     = ProblemTypeBase + "missing-key"             // 400
	ProblemMalformedKey   = ProblemTypeBase + "malformed-key"           // 400
	ProblemBodyTooLarge   = ProblemTypeBase + "body-too-large"          // 413
	ProblemBodyUnreadable = ProblemTypeBase + "body-unreadable"         // 400
	ProblemStoreDown      = ProblemTypeBase + "store-unavailable"       // 503
	ProblemInFlight       = ProblemTypeBase + "request-in-flight"       // 409
	ProblemKeyReused      = ProblemTypeBase + "key-reused"              // 422
	ProblemInvalid        = ProblemTypeBase + "invalid-request"         // 422
	ProblemNotRecorded    = ProblemTypeBase + "response-not-recorded"   // the original status
	ProblemNotReplayable  = ProblemTypeBase + "response-not-replayable" // 422
)

// HTTPProblem is an error that carries its own RFC 9457 answer. When a
// Validator returns an error that implements it (errors.As finds it), the
// middleware answers HTTPStatus() with ProblemJSON() as the body, typed
// application/problem+json. Package geojson's errors implement it.
type HTTPProblem interface {
	error
	HTTPStatus() int
	ProblemJSON() []byte
}

type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

func problemJSON(typ, title string, status int, detail string) []byte {
	b, _ := json.Marshal(problem{Type: typ, Title: title, Status: status, Detail: detail}) // cannot fail
	return b
}

// writeProblem answers with a problem document, not to be cached. A positive
// retryAfter adds Retry-After, in whole seconds rounded up.
func writeProblem(w http.ResponseWriter, status int, body []byte, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
