package middleware_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestSentinelsSayMiddleware: every exported error of the package says
// where it comes from, as the standard library's and the other geoidem
// packages' sentinels do, so that a wrapped error in a log names its package.
func TestSentinelsSayMiddleware(t *testing.T) {
	for _, err := range []error{middleware.ErrMalformedKey, middleware.ErrHandlerPanicked} {
		if !strings.HasPrefix(err.Error(), "middleware: ") {
			t.Errorf("%q does not begin with \"middleware: \"", err)
		}
	}
}

// TestMalformedKeyDetailSaysItOnce: the malformed-key problem's detail
// names the header and the reason, without the package prefix the
// sentinel carries for logs.
func TestMalformedKeyDetailSaysItOnce(t *testing.T) {
	m, err := middleware.New(new(memstore.Store), middleware.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
	r.Header.Set("Idempotency-Key", "a,b")
	w := httptest.NewRecorder()
	m.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
	var p struct{ Type, Detail string }
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", w.Body, err)
	}
	const want = "Idempotency-Key: malformed idempotency key: a bare key must not contain a comma"
	if p.Type != middleware.ProblemMalformedKey || !strings.HasPrefix(p.Detail, want) {
		t.Errorf("problem %+v, want type %s and a detail beginning %q", p, middleware.ProblemMalformedKey, want)
	}
}
