package middleware

import (
	"errors"

	"github.com/geoidem/geoidem/problem"
)

// The problem types the middleware answers with. Each is problem.TypeBase
// followed by its name, stable across releases.
const (
	ProblemMissingKey     = problem.TypeBase + "missing-key"             // 400
	ProblemMalformedKey   = problem.TypeBase + "malformed-key"           // 400
	ProblemBodyTooLarge   = problem.TypeBase + "body-too-large"          // 413
	ProblemBodyUnreadable = problem.TypeBase + "body-unreadable"         // 408
	ProblemStoreDown      = problem.TypeBase + "store-unavailable"       // 503
	ProblemInFlight       = problem.TypeBase + "request-in-flight"       // 409
	ProblemKeyReused      = problem.TypeBase + "key-reused"              // 422
	ProblemInvalid        = problem.TypeBase + "invalid-request"         // 422
	ProblemNotRecorded    = problem.TypeBase + "response-not-recorded"   // the original status
	ProblemNotReplayable  = problem.TypeBase + "response-not-replayable" // 422
	ProblemStoreFull      = problem.TypeBase + "store-full"              // 503
	ProblemClientFull     = problem.TypeBase + "client-full"             // 429
)

// HTTPProblem is an error that carries its own RFC 9457 answer. When a
// Validator returns an error that implements it (errors.As finds it), the
// middleware answers HTTPStatus() with ProblemJSON() as the body, typed
// application/problem+json. Package geojson's errors and problem.Details
// implement it.
type HTTPProblem interface {
	error
	HTTPStatus() int
	ProblemJSON() []byte
}

// problemOf returns the answer to a refusal err: its own status and
// document when it is an HTTPProblem, else a problem of type typ, title
// and status with err's text as the detail.
func problemOf(err error, typ, title string, status int) (int, []byte) {
	var hp HTTPProblem
	if errors.As(err, &hp) {
		return hp.HTTPStatus(), hp.ProblemJSON()
	}
	return status, problemJSON(typ, title, status, err.Error())
}
