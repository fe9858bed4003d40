package problem_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// TestWrite: a Details is written as the middleware writes its own,
// Retry-After rounded up to whole seconds, members in their fixed order;
// the zero fields take about:blank, the reason phrase and 500.
func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("Content-Length", "3")
	problem.Write(w, problem.Details{
		Type: "https://example.com/probs/busy", Title: "Busy <now>", Status: http.StatusServiceUnavailable,
		Detail: "the database is failing over", RetryAfter: 1500 * time.Millisecond,
	})
	if w.Code != 503 || w.Header().Get("Content-Type") != "application/problem+json" || w.Header().Get("Cache-Control") != "no-store" ||
		w.Header().Get("Retry-After") != "2" || w.Header().Get("Content-Length") != "" {
		t.Errorf("status %d, header %v; want 503, application/problem+json, no-store, Retry-After 2, no Content-Length", w.Code, w.Header())
	}
	const want = `{"type":"https://example.com/probs/busy","title":"Busy <now>","status":503,"detail":"the database is failing over"}`
	if got := w.Body.String(); got != want {
		t.Errorf("body %s, want %s", got, want)
	}

	w = httptest.NewRecorder()
	problem.Write(w, problem.Details{})
	if got, want := w.Body.String(), `{"type":"about:blank","title":"Internal Server Error","status":500}`; w.Code != 500 || got != want || w.Header().Get("Retry-After") != "" {
		t.Errorf("zero Details: status %d, %s, Retry-After %q; want 500, %s", w.Code, got, w.Header().Get("Retry-After"), want)
	}
}

// TestErrorsAndExtensions: the errors member carries each pointer, and
// extensions follow in name order; what is written reads back the same.
func TestErrorsAndExtensions(t *testing.T) {
	d := problem.Details{
		Type: problem.TypeBase + "feature-rejected", Title: "Feature refused", Status: 422, Instance: "/features/7",
		Errors:     []problem.Error{{Pointer: "/properties/observation_time", Detail: "in the future"}, {Pointer: "", Detail: "whole body", Rule: "r"}},
		Extensions: map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`{"b":true}`), "status": json.RawMessage(`1`)},
	}
	got := string(d.ProblemJSON())
	const want = `{"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#feature-rejected","title":"Feature refused","status":422,` +
		`"instance":"/features/7","errors":[{"pointer":"/properties/observation_time","detail":"in the future"},{"pointer":"","detail":"whole body","rule":"r"}],"a":{"b":true},"z":1}`
	if got != want {
		t.Fatalf("document\n%s\nwant\n%s", got, want)
	}
	back, ok := problem.Parse("application/problem+json; charset=utf-8", []byte(got))
	if !ok {
		t.Fatal("Parse refused what Write wrote")
	}
	delete(d.Extensions, "status")
	if !reflect.DeepEqual(back.Errors, d.Errors) || back.Instance != d.Instance || len(back.Extensions) != 2 || string(back.Extensions["a"]) != `{"b":true}` {
		t.Errorf("read back %+v", back)
	}
}

// TestParseIsLenient: standard members of the wrong type are ignored (RFC
// 9457 section 3.1), so is an errors entry that is not an object; a
// document that is not an object, or not typed problem+json, is none.
func TestParseIsLenient(t *testing.T) {
	d, ok := problem.Parse("application/problem+json", []byte(`{"title":7,"status":"422","instance":42,"errors":[1,{"pointer":"/a","detail":"x"}],"ext":{"a":1}}`))
	if !ok || d.Type != "about:blank" || d.Title != "" || d.Status != 0 || d.Instance != "" || len(d.Errors) != 1 || d.Errors[0].Pointer != "/a" || string(d.Extensions["ext"]) != `{"a":1}` {
		t.Errorf("Parse = %+v, %v", d, ok)
	}
	for _, c := range []struct{ ct, body string }{
		{"application/problem+json", `[1]`},
		{"application/json", `{"title":"x"}`},
		{"", `{"title":"x"}`},
	} {
		if _, ok := problem.Parse(c.ct, []byte(c.body)); ok {
			t.Errorf("Parse(%q, %s) read a problem", c.ct, c.body)
		}
	}
}

// TestDetailsIsAnError: a Details is an error with its status and
// document, as the middleware reads a Validator's refusal.
func TestDetailsIsAnError(t *testing.T) {
	var hp interface {
		error
		HTTPStatus() int
		ProblemJSON() []byte
	}
	err := error(problem.Details{Status: 422, Title: "Refused", Detail: "no"})
	if !errors.As(err, &hp) || hp.HTTPStatus() != 422 || err.Error() != "Refused: no" {
		t.Errorf("Details as an error: %v", err)
	}
}

// TestName: geoidem's type URIs name their problem; any other has none.
func TestName(t *testing.T) {
	for typ, want := range map[string]string{
		problem.TypeBase + "key-reused":        "key-reused",
		problem.TypeBase:                       "",
		"about:blank":                          "",
		"https://example.com/probs#key-reused": "",
	} {
		if got := (problem.Details{Type: typ}).Name(); got != want {
			t.Errorf("Name of %q = %q, want %q", typ, got, want)
		}
	}
}
