package geojson

import (
	"mime"
	"net/http"
)

// RequestValidator validates request bodies for the idempotency
// middleware, which accepts any value with a ValidateRequest method and
// answers an error that has HTTPStatus and ProblemJSON methods with that
// status and body as application/problem+json. The zero value validates
// with default [Options].
type RequestValidator struct {
	// Options configures validation.
	Options Options
}

// ValidateRequest checks r's Content-Type and then body, which the
// caller has already read from r. It returns nil for a valid GeoJSON
// body; a *[MediaTypeError] (415) when the Content-Type is neither
// application/geo+json nor application/json (parameters such as charset
// are allowed; a missing Content-Type is rejected); a *[SyntaxError]
// (400) when body is not JSON; and a *[ValidationError] (422) listing
// the problems otherwise. Every error has HTTPStatus and ProblemJSON
// methods.
func (v RequestValidator) ValidateRequest(r *http.Request, body []byte) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/geo+json" && mt != "application/json") {
		return &MediaTypeError{ContentType: ct}
	}
	return Validate(body, v.Options)
}
