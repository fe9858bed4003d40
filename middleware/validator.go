package middleware

import (
	"net/http"
)

// A Validator checks a request body after its key is claimed and before the
// handler runs. A non-nil error is the final answer for that payload. It is
// not recorded: the claim is released, and a retry of the same body is
// validated again, so the answer must depend on the request alone, never
// on anything that could change between tries (as Stripe does, a request
// that fails validation has no side effect). What a key store keeps for an
// invalid body is then its key alone, however large the answer. When the error implements
// HTTPProblem, its status and problem document are the answer; otherwise
// the answer is 422 with the error's text as the detail.
//
// Package geojson's RequestValidator satisfies Validator.
type Validator interface {
	ValidateRequest(r *http.Request, body []byte) error
}

// ValidatorFunc adapts a function to Validator.
type ValidatorFunc func(r *http.Request, body []byte) error

// ValidateRequest calls f(r, body).
func (f ValidatorFunc) ValidateRequest(r *http.Request, body []byte) error { return f(r, body) }
