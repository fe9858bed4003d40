package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/standardwebhooks"
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

// pathSpellings are five spellings of /features that http.ServeMux routes
// to the same handler: percent-encodings of unreserved characters.
var pathSpellings = []string{"/features", "/%66eatures", "/feature%73", "/%66%65atures", "/%66eature%73"}

// One delivery sent to several spellings of its path is one resource and
// one request: ServeMux routes the decoded path, so the default scope and
// the fingerprint must not tell the spellings apart. The handler runs once,
// every other spelling is replayed, whether the middleware wraps the mux or
// is mounted on the route, and whether the delivery is a signed Standard
// Webhook (the signature does not cover the path, so a captured message
// re-sent to another spelling verifies).
func TestPathSpellingsShareOneScope(t *testing.T) {
	secret := standardwebhooks.GenerateSecret()
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, signed := range []bool{false, true} {
		for _, mounted := range []string{"around the mux", "on the route"} {
			h := newCounter()
			cfg := middleware.Config{}
			if signed {
				cfg.KeyHeader = standardwebhooks.HeaderID
			}
			m := newMiddleware(t, new(memstore.Store), cfg)
			mux := http.NewServeMux()
			var handler http.Handler
			if mounted == "on the route" {
				mux.Handle("POST /features", m.Handler(h))
				handler = mux
			} else {
				mux.Handle("POST /features", h)
				handler = m.Handler(mux)
			}
			if signed {
				handler = verifier.Handler(handler)
			}
			var header http.Header // one captured delivery, re-sent as is
			for i, path := range pathSpellings {
				r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(feature))
				if header == nil {
					r.Header.Set("Content-Type", "application/geo+json")
					r.Header.Set("Idempotency-Key", "k1")
					if signed {
						if err := signer.SignRequest(r, "msg_1", []byte(feature)); err != nil {
							t.Fatal(err)
						}
					}
					header = r.Header.Clone()
				} else {
					r.Header = header.Clone()
				}
				w := serve(handler, r)
				if want := map[bool]string{true: "", false: "true"}[i == 0]; w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != want {
					t.Errorf("signed %v, %s: %s: %d replayed=%q, want 201 replayed=%q; body %s", signed, mounted, path, w.Code, w.Header().Get("Idempotent-Replayed"), want, w.Body)
				}
			}
			if n := h.total.Load(); n != 1 {
				t.Errorf("signed %v, middleware %s: the handler ran %d times for one delivery sent to %d spellings of /features, want 1", signed, mounted, n, len(pathSpellings))
			}
		}
	}
}
