package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// ServeMux routes /acct/x%2Fclose to /acct/{id} and /acct/x/close to
// /acct/{id}/close: the two share a decoded path but are different routes,
// so the same key on each must run each handler, never replay the other's
// answer.
func TestEscapedPathsAreDifferentScopes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /acct/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "updated "+r.PathValue("id"))
	})
	mux.HandleFunc("POST /acct/{id}/close", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "closed "+r.PathValue("id"))
	})
	for _, cfg := range []middleware.Config{{}, {CanonicalJSON: true}} {
		h := newMiddleware(t, new(memstore.Store), cfg).Handler(mux)
		req := func(path string) *http.Request {
			r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(feature))
			r.Header.Set("Idempotency-Key", "k1")
			return r
		}
		if w := serve(h, req("/acct/x%2Fclose")); w.Body.String() != "updated x/close" {
			t.Fatalf("/acct/x%%2Fclose: %d %q", w.Code, w.Body)
		}
		if w := serve(h, req("/acct/x/close")); w.Body.String() != "closed x" || w.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("/acct/x/close with the same key: %d %q replayed=%q, want its own handler's answer",
				w.Code, w.Body, w.Header().Get("Idempotent-Replayed"))
		}
	}
}

// Methods are matched case-insensitively: "post" is covered like POST.
func TestCoveredMethodsIgnoreCase(t *testing.T) {
	h := newCounter()
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	for _, method := range []string{"post", "Post", "patch"} {
		r := httptest.NewRequest(method, "/features", strings.NewReader(feature)) // no key
		wantProblem(t, serve(m.Handler(h), r), http.StatusBadRequest, middleware.ProblemMissingKey)
	}
	if h.total.Load() != 0 {
		t.Fatalf("the handler ran %d times for covered methods without a key", h.total.Load())
	}
}
