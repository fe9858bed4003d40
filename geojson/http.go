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
//
// It also has the middleware's two optional capabilities, found there by
// type assertion (package geojson does not import the middleware):
// CheckHeaders, which the middleware calls before it claims the key, so
// that a request refused for its Content-Type is not recorded and its
// corrected retry runs; and DecodeRequest, whose [*Document] the
// middleware hands to the handler in its request context, so the body is
// parsed once. A handler behind the middleware gets it with
//
//	doc, ok := middleware.Decoded[*geojson.Document](r.Context())
type RequestValidator struct {
	// Options configures validation.
	Options Options
}

// CheckHeaders checks r's Content-Type: it returns a [problem.Details]
// (415, of type [ProblemTypeUnsupportedMediaType]) when it is neither application/geo+json nor application/json
// (parameters such as charset are allowed; a missing Content-Type is
// rejected), and nil otherwise. It looks at nothing but the headers.
func (v RequestValidator) CheckHeaders(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "application/geo+json" || ct == "application/json" {
		return nil // the common case, without parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/geo+json" && mt != "application/json") {
		return mediaTypeError(ct)
	}
	return nil
}

// ValidateRequest checks r's Content-Type (as CheckHeaders does) and then
// body, which the caller has already read from r. It returns nil for a
// valid GeoJSON body; CheckHeaders's [problem.Details] (415) for another Content-Type;
// a *[SyntaxError] (400) when body is not JSON; and a *[ValidationError]
// (422) listing the problems otherwise. Every error has HTTPStatus and
// ProblemJSON methods.
func (v RequestValidator) ValidateRequest(r *http.Request, body []byte) error {
	if err := v.CheckHeaders(r); err != nil {
		return err
	}
	return Validate(body, v.Options)
}

// DecodeRequest checks r and body exactly as ValidateRequest does, with
// the same errors, and for a valid body returns its [*Document]
// ([DecodeDocument]): the features with their ids as written, their
// geometries as go-geom values, and their properties and bytes as
// sub-slices of body. The result's dynamic type is always *Document.
func (v RequestValidator) DecodeRequest(r *http.Request, body []byte) (any, error) {
	if err := v.CheckHeaders(r); err != nil {
		return nil, err
	}
	doc, err := DecodeDocument(body, v.Options)
	if err != nil {
		return nil, err
	}
	return doc, nil
}
