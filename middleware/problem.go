package middleware

import (
	"errors"
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
	ProblemBodyUnreadable = ProblemTypeBase + "body-unreadable"         // 408
	ProblemStoreDown      = ProblemTypeBase + "store-unavailable"       // 503
	ProblemInFlight       = ProblemTypeBase + "request-in-flight"       // 409
	ProblemKeyReused      = ProblemTypeBase + "key-reused"              // 422
	ProblemInvalid        = ProblemTypeBase + "invalid-request"         // 422
	ProblemNotRecorded    = ProblemTypeBase + "response-not-recorded"   // the original status
	ProblemNotReplayable  = ProblemTypeBase + "response-not-replayable" // 422
	ProblemStoreFull      = ProblemTypeBase + "store-full"              // 503
	ProblemClientFull     = ProblemTypeBase + "client-full"             // 429
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
