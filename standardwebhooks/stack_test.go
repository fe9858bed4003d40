package standardwebhooks_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// stack builds ingest behind the idempotency middleware keyed by
// webhook-id, with the verifier outside (verifierOutside) or, wrongly,
// inside it.
func stack(t *testing.T, f *handlerFixture, verifierOutside bool) (http.Handler, *memstore.Store, *int) {
	t.Helper()
	store := memstore.New(memstore.Config{})
	idem, err := middleware.New(store, middleware.Config{KeyHeader: standardwebhooks.HeaderID})
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{f.secret}, Now: f.clock.Now})
	runs := new(int)
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*runs++
		w.WriteHeader(http.StatusCreated)
	})
	if verifierOutside {
		return v.Handler(idem.Handler(ingest)), store, runs
	}
	return idem.Handler(v.Handler(ingest)), store, runs
}

func TestForgedRequestClaimsNoKey(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	h, store, runs := stack(t, f, true)

	// A forger sends a payload of its own under the real sender's next id.
	forged := f.signed("msg_next", []byte(`{"forged":true}`))
	forged.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, forged)
	checkProblem(t, w, http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid)
	if n := store.Stats().Entries; n != 0 || *runs != 0 {
		t.Fatalf("after a forged request: %d keys in the store, ingest ran %d times; want none", n, *runs)
	}

	// The real delivery under that id executes, and its retry is replayed.
	for i, wantReplayed := range []bool{false, true} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, f.signed("msg_next", body))
		if w.Code != http.StatusCreated || (w.Header().Get("Idempotent-Replayed") == "true") != wantReplayed {
			t.Fatalf("delivery %d: %d (replayed %q), want 201 (replayed %v)", i+1, w.Code, w.Header().Get("Idempotent-Replayed"), wantReplayed)
		}
	}
	if *runs != 1 {
		t.Errorf("ingest ran %d times, want once", *runs)
	}
}

// TestVerifierInsideMiddlewarePoisonsKeys shows why the order matters: with
// the verifier inside the idempotency middleware, one forged request burns
// the real delivery's id.
func TestVerifierInsideMiddlewarePoisonsKeys(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	h, store, runs := stack(t, f, false)
	forged := f.signed("msg_next", body) // the forger knows (or guesses) the payload too
	forged.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature)
	h.ServeHTTP(httptest.NewRecorder(), forged)
	if store.Stats().Entries != 1 {
		t.Fatalf("expected the wrong order to claim the forged key")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, f.signed("msg_next", body))
	if w.Code != http.StatusUnauthorized || w.Header().Get("Idempotent-Replayed") != "true" || *runs != 0 {
		t.Fatalf("real delivery after a forgery, wrong order: %d replayed=%q, ingest ran %d times; expected the forger's 401 replayed",
			w.Code, w.Header().Get("Idempotent-Replayed"), *runs)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, f.signed("msg_next", bytes.ToUpper(body)))
	if w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("another payload under the burnt id: %d, expected 422 key-reused", w.Code)
	}
}

func TestProblemTypesShareTheMiddlewareBase(t *testing.T) {
	for _, typ := range []string{standardwebhooks.ProblemSignatureMissing, standardwebhooks.ProblemSignatureInvalid, standardwebhooks.ProblemTimestampOutOfTolerance} {
		if !strings.HasPrefix(typ, problem.TypeBase) || len(typ) == len(problem.TypeBase) {
			t.Errorf("%s is not a fragment under problem.TypeBase %s", typ, problem.TypeBase)
		}
	}
	// The body problems are the middleware's own types.
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{MaxBodyBytes: 10})
	checkProblem(t, f.serve(f.signed("msg_1", body)), http.StatusRequestEntityTooLarge, middleware.ProblemBodyTooLarge)
	r := f.signed("msg_1", body[:5])
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:2]), errReader{}))
	w := f.serve(r)
	checkProblem(t, w, http.StatusRequestTimeout, middleware.ProblemBodyUnreadable)
	if w.Header().Get("Retry-After") == "" {
		t.Errorf("body-unreadable without Retry-After: the transport's fault is transient")
	}
}
