package middleware

import (
	"context"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// ProblemInvalidHeaders is the type of the 400 answered when a
// [HeaderChecker] refuses a request with an error that carries no problem
// of its own.
const ProblemInvalidHeaders = problem.TypeBase + "invalid-headers" // 400

// RequestDecoder is an optional capability of a [Validator], found by type
// assertion in [New] (as database/sql/driver grows optional interfaces):
// validating also yields the decoded body, so that the handler need not
// parse it again.
//
// When Config.Validator implements it, the middleware calls DecodeRequest
// instead of ValidateRequest. DecodeRequest must accept and refuse exactly
// what ValidateRequest does, with the same errors (recorded and replayed
// the same way). The value it returns for an accepted body is carried in
// the handler's request context, next to the [keystore.Hold]; the handler
// gets it with [Decoded]. The value may refer to the body's bytes, which
// the middleware never modifies.
//
// Package geojson's RequestValidator implements it: its value is a
// *geojson.Document.
//
// A type that embeds a RequestDecoder (geojson.RequestValidator, say) to
// change what ValidateRequest accepts implements RequestDecoder too,
// through the promoted method, and the middleware would call that method,
// not the override: define DecodeRequest on the wrapper as well, or hold
// the inner validator in a named field instead of embedding it.
type RequestDecoder interface {
	DecodeRequest(r *http.Request, body []byte) (any, error)
}

// HeaderChecker is an optional capability of a [Validator], found by type
// assertion in [New]: a check that depends only on the request's headers
// (a Content-Type the handler cannot read, say) and that the sender can
// fix. CheckHeaders runs before the key is claimed, like the 413 for a body
// too large, and its refusal is answered but not recorded, so the corrected
// retry, with the same key and body, runs. When the error implements
// [HTTPProblem], its status and problem document are the answer; otherwise
// the answer is 400 of type [ProblemInvalidHeaders] with the error's text
// as the detail.
//
// Package geojson's RequestValidator implements it: a Content-Type other
// than application/geo+json or application/json is answered 415.
type HeaderChecker interface {
	CheckHeaders(r *http.Request) error
}

type decodedKey struct{}

// Decoded returns the value that the [RequestDecoder] of Config.Validator
// decoded from the request body, when ctx is (or derives from) the
// context of a request the middleware passed to the handler, and the value
// is a T. It is the typed accessor for handlers, for instance
//
//	doc, ok := middleware.Decoded[*geojson.Document](r.Context())
//
// It reports false when no value was decoded (no Validator, or one without
// the capability) or the value is not a T; Decoded[any] returns the value
// whatever its type.
func Decoded[T any](ctx context.Context) (T, bool) {
	v, ok := ctx.Value(decodedKey{}).(T)
	return v, ok
}

// validate runs the Validator on r2, decoding when it can, and returns the
// request the handler gets: r2 itself, or r2 with the decoded value in its
// context.
func (m *Middleware) validate(r2 *http.Request, body []byte) (*http.Request, error) {
	if m.decoder == nil {
		return r2, m.validator.ValidateRequest(r2, body)
	}
	v, err := m.decoder.DecodeRequest(r2, body)
	if err != nil || v == nil {
		return r2, err
	}
	return r2.WithContext(context.WithValue(r2.Context(), decodedKey{}, v)), nil
}

// refuseHeaders runs the HeaderChecker, if any, before the claim. It
// answers and returns true when the headers are refused.
func (m *Middleware) refuseHeaders(w http.ResponseWriter, r *http.Request, start time.Time) bool {
	if m.headers == nil {
		return false
	}
	err := m.headers.CheckHeaders(r)
	if err == nil {
		return false
	}
	status, doc := problemOf(err, ProblemInvalidHeaders, "Request headers refused", http.StatusBadRequest)
	writeProblem(w, status, doc, 0)
	m.done(r.Context(), Event{Outcome: Rejected, Status: status, Err: err}, start)
	return true
}
