package middleware_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/geoidem/geoidem/middleware"
)

// TestWriteProblem: a handler's problem is written as the middleware
// writes its own, Retry-After rounded up to whole seconds; the zero fields
// take about:blank, the reason phrase and 500.
func TestWriteProblem(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("Content-Length", "3")
	middleware.WriteProblem(w, middleware.Problem{
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
	middleware.WriteProblem(w, middleware.Problem{})
	var doc map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if w.Code != 500 || doc["type"] != "about:blank" || doc["title"] != "Internal Server Error" || doc["status"] != 500.0 || w.Header().Get("Retry-After") != "" {
		t.Errorf("zero Problem: status %d, %v, Retry-After %q", w.Code, doc, w.Header().Get("Retry-After"))
	}

	var hp middleware.HTTPProblem
	if err := error(middleware.Problem{Status: 422, Title: "Refused", Detail: "no"}); !errors.As(err, &hp) || hp.HTTPStatus() != 422 || err.Error() != "Refused: no" {
		t.Errorf("Problem as an error: %v", err)
	}
}
