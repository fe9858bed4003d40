package middleware

import (
	"net/http"
)

// A Validator checks a request body after its key is claimed and before the
// handler runs. A non-nil error is the final answer for that payload: it is
// recorded and replayed like a handler's response, so it must not depend on
// anything that could change on a retry. When the error implements
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
