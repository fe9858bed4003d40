// Package problem is geoidem's one RFC 9457 problem document: what the
// middleware, the signature verifier, the GeoJSON validator and a team's own
// handler answer with, and what the paired sender (package client) reads.
//
// A [Details] is written with [Write] (application/problem+json, not to be
// cached, with Retry-After when it says so), read with [Parse], and is an
// error that the middleware answers as it is when a Validator returns it.
// Every problem type geoidem writes is [TypeBase] with a fragment, listed in
// docs/problems.md. A refusal that points into the request body carries
// [Details.Errors], each with an RFC 6901 JSON pointer, as geoidem's own 422
// answers do:
//
//	problem.Write(w, problem.Details{
//		Type:   "https://example.com/probs/feature-rejected",
//		Title:  "Feature refused",
//		Status: http.StatusUnprocessableEntity,
//		Errors: []problem.Error{{Pointer: "/features/3/properties/observation_time", Detail: "more than 5m0s ahead of the receiver's clock"}},
//	})
package problem

import (
	"bytes"
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"slices"
	"time"
)

// MediaType is the content type of a problem document (RFC 9457 §3).
const MediaType = "application/problem+json"

// TypeBase is the prefix of every problem type URI geoidem writes; the
// fragment names the problem, listed in docs/problems.md.
const TypeBase = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#"

// Details is an RFC 9457 problem document.
type Details struct {
	// Type is the problem type URI; empty means "about:blank", whose title
	// is the status's reason phrase.
	Type string
	// Title is a short summary of the type, the same for every occurrence.
	// Empty: the status's reason phrase.
	Title string
	// Status is the HTTP status code. Zero: 500.
	Status int
	// Detail explains this occurrence; empty leaves the member out.
	Detail string
	// Instance identifies this occurrence; empty leaves the member out.
	Instance string
	// Errors lists what is wrong with the request, each with a JSON pointer
	// into its body: the "errors" member (as RFC 9457 section 3 shows it).
	Errors []Error
	// Extensions holds every other member, as JSON: read undecoded, written
	// after the standard members in name order. A name of a standard member
	// is ignored.
	Extensions map[string]json.RawMessage
	// RetryAfter, when positive, is sent by Write as Retry-After in whole
	// seconds, rounded up: for a 503 or 429 after which the sender should
	// retry with the same key. It is not part of the document.
	RetryAfter time.Duration
}

// Error is one entry of Details.Errors.
type Error struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value in the
	// request body; "" is the whole body.
	Pointer string `json:"pointer"`
	// Detail says what is wrong with it.
	Detail string `json:"detail"`
	// Rule names the rule broken, where there is a name for it (the
	// geojson package's rules); empty leaves the member out.
	Rule string `json:"rule,omitempty"`
	// Truncated reports that Pointer or Detail was cut short by its writer
	// (geojson bounds both), false leaves the member out.
	Truncated bool `json:"truncated,omitempty"`
}

// Name returns the problem's name when its type is one of geoidem's (the
// fragment after TypeBase, as "key-reused"), and "" for any other type.
func (d Details) Name() string {
	if len(d.Type) > len(TypeBase) && d.Type[:len(TypeBase)] == TypeBase {
		return d.Type[len(TypeBase):]
	}
	return ""
}

// standard reports whether name is a member Details has a field for.
func standard(name string) bool {
	switch name {
	case "type", "title", "status", "detail", "instance", "errors":
		return true
	}
	return false
}

// filled returns d with its zero Type, Title and Status as documented.
func (d Details) filled() Details {
	if d.Status == 0 {
		d.Status = http.StatusInternalServerError
	}
	if d.Type == "" {
		d.Type = "about:blank"
	}
	if d.Title == "" {
		d.Title = http.StatusText(d.Status)
	}
	return d
}

// MarshalJSON renders the document: type, title, status, detail, instance,
// errors, then the extensions in name order, without HTML escaping.
func (d Details) MarshalJSON() ([]byte, error) {
	d = d.filled()
	var ext []member
	if d.Instance != "" {
		var b bytes.Buffer
		appendString(&b, d.Instance)
		ext = append(ext, member{Name: "instance", Value: b.Bytes()})
	}
	if len(d.Errors) > 0 {
		var b bytes.Buffer
		appendJSON(&b, d.Errors)
		ext = append(ext, member{Name: "errors", Value: b.Bytes()})
	}
	if len(d.Extensions) > 0 {
		for _, name := range slices.Sorted(maps.Keys(d.Extensions)) {
			if v := d.Extensions[name]; !standard(name) && json.Valid(v) {
				ext = append(ext, member{Name: name, Value: v})
			}
		}
	}
	return render(doc{Type: d.Type, Title: d.Title, Status: d.Status, Detail: d.Detail}, ext...), nil
}

// UnmarshalJSON reads a problem document. A standard member of the wrong
// JSON type is ignored, as RFC 9457 requires, and so is an entry of
// "errors" that is not an object; a missing type is "about:blank". It
// fails only when data is not a JSON object.
func (d *Details) UnmarshalJSON(data []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return err
	}
	*d = Details{Type: "about:blank"}
	for name, raw := range members {
		switch name {
		case "type":
			decodeMember(raw, &d.Type)
		case "title":
			decodeMember(raw, &d.Title)
		case "status":
			decodeMember(raw, &d.Status)
		case "detail":
			decodeMember(raw, &d.Detail)
		case "instance":
			decodeMember(raw, &d.Instance)
		case "errors":
			var entries []json.RawMessage
			decodeMember(raw, &entries)
			for _, e := range entries {
				var pe Error
				if json.Unmarshal(e, &pe) == nil {
					d.Errors = append(d.Errors, pe)
				}
			}
		default:
			if d.Extensions == nil {
				d.Extensions = make(map[string]json.RawMessage)
			}
			d.Extensions[name] = raw
		}
	}
	if d.Type == "" {
		d.Type = "about:blank"
	}
	return nil
}

func decodeMember[T any](raw json.RawMessage, v *T) {
	var tmp T
	if json.Unmarshal(raw, &tmp) == nil {
		*v = tmp
	}
}

// Error returns the title and, if any, the detail: a Details is an error,
// which the middleware answers as it is when a Validator returns it.
func (d Details) Error() string {
	d = d.filled()
	if d.Detail == "" {
		return d.Title
	}
	return d.Title + ": " + d.Detail
}

// HTTPStatus returns the status the problem is answered with.
func (d Details) HTTPStatus() int { return d.filled().Status }

// ProblemJSON returns the document.
func (d Details) ProblemJSON() []byte {
	b, _ := d.MarshalJSON()
	return b
}

// Write answers d: its status, Content-Type application/problem+json,
// Cache-Control no-store, Retry-After when d.RetryAfter is positive, and
// the document as the body. Headers set before (a WWW-Authenticate
// challenge, say) are kept, a Content-Length dropped.
func Write(w http.ResponseWriter, d Details) {
	d = d.filled()
	writeBody(w, d.Status, d.ProblemJSON(), d.RetryAfter)
}

// Parse returns the problem document of a response, given its Content-Type
// and body, and false when the content type is not application/problem+json
// or the body is not a JSON object.
func Parse(contentType string, body []byte) (Details, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != MediaType {
		return Details{}, false
	}
	var d Details
	if err := json.Unmarshal(bytes.TrimSpace(body), &d); err != nil {
		return Details{}, false
	}
	return d, true
}
