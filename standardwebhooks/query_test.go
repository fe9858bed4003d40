package standardwebhooks_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// withQuery returns r sent to the same path with query instead of its own.
func withQuery(r *http.Request, query string) *http.Request {
	u := *r.URL
	u.RawQuery = query
	r.URL = &u
	r.RequestURI = u.RequestURI()
	return r
}

// TestHandlerRefusesAQueryTheSignatureDoesNotCover: the signature covers
// id.timestamp.body and nothing of the URL, so a captured signed message
// may be sent again with any query added. The Verifier refuses such a
// request, 400 webhook-query-not-signed, before reading its body.
func TestHandlerRefusesAQueryTheSignatureDoesNotCover(t *testing.T) {
	for _, query := range []string{"x=1", "x", "a=1&b=2", "%20"} {
		f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
		r := withQuery(f.signed("msg_1", body), query)
		cr := &countingReader{r: r.Body}
		r.Body = io.NopCloser(cr)
		p := checkProblem(t, f.serve(r), http.StatusBadRequest, standardwebhooks.ProblemQueryNotSigned)
		if f.next.calls != 0 {
			t.Errorf("query %q: next ran %d times", query, f.next.calls)
		}
		if cr.n != 0 {
			t.Errorf("query %q: %d body bytes read before refusing on the URL", query, cr.n)
		}
		if !strings.Contains(p.Detail, "query") {
			t.Errorf("query %q: detail %q does not name the query", query, p.Detail)
		}
		if !strings.Contains(f.logs.String(), "reason=query_not_signed") {
			t.Errorf("query %q: no rejection record with its reason:\n%s", query, f.logs)
		}
	}
	// A bare "?" carries no query: the URL is the one signed for.
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	r := f.signed("msg_1", body)
	r.URL.ForceQuery = true
	if w := f.serve(r); w.Code != http.StatusAccepted || f.next.calls != 1 {
		t.Errorf("an empty query (\"?\"): status %d, next ran %d times; want 202 and once", w.Code, f.next.calls)
	}
}

// The refusal is about the URL, not the signature: an unsigned request
// with a query is still answered 401, as without one.
func TestUnsignedRequestWithQueryIsStill401(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	r := httptest.NewRequest(http.MethodPost, "/webhooks?x=1", strings.NewReader("{}"))
	checkProblem(t, f.serve(r), http.StatusUnauthorized, standardwebhooks.ProblemSignatureMissing)
}

// TestAllowQueryPassesTheQueryOn: a Verifier configured with AllowQuery
// passes a signed request with a query on to next, query included.
func TestAllowQueryPassesTheQueryOn(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{AllowQuery: true})
	if w := f.serve(withQuery(f.signed("msg_1", body), "tenant=acme")); w.Code != http.StatusAccepted || f.next.calls != 1 {
		t.Fatalf("status %d, next ran %d times; want 202 and once", w.Code, f.next.calls)
	}
	if f.next.rawQuery != "tenant=acme" {
		t.Errorf("next saw the query %q, want tenant=acme", f.next.rawQuery)
	}
}

// TestReplayWithQueryNeitherRunsNorBurnsTheID: the idempotency middleware
// fingerprints the query. Were a captured signed message, replayed with
// "?x=1", let through, it would claim the id under a fingerprint of its
// own (and run ingest), and the genuine delivery would then be answered
// 422 key-reused, for the whole retention. It is refused before the claim,
// whichever comes first.
func TestReplayWithQueryNeitherRunsNorBurnsTheID(t *testing.T) {
	t.Run("replay first", func(t *testing.T) {
		f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
		h, store, runs := stack(t, f, true)
		genuine := f.signed("msg_next", body)
		replay := withQuery(f.signed("msg_next", body), "x=1") // the same headers and body

		w := httptest.NewRecorder()
		h.ServeHTTP(w, replay)
		checkProblem(t, w, http.StatusBadRequest, standardwebhooks.ProblemQueryNotSigned)
		if n := store.Stats().Entries; n != 0 || *runs != 0 {
			t.Fatalf("after the replay with a query: %d keys in the store, ingest ran %d times; want none", n, *runs)
		}
		for i, wantReplayed := range []bool{false, true} {
			w := httptest.NewRecorder()
			if i == 0 {
				h.ServeHTTP(w, genuine)
			} else {
				h.ServeHTTP(w, f.signed("msg_next", body))
			}
			if w.Code != http.StatusCreated || (w.Header().Get("Idempotent-Replayed") == "true") != wantReplayed {
				t.Fatalf("genuine delivery %d: %d (replayed %q), want 201 (replayed %v); body %s", i+1, w.Code, w.Header().Get("Idempotent-Replayed"), wantReplayed, w.Body)
			}
		}
		if *runs != 1 {
			t.Errorf("ingest ran %d times, want once", *runs)
		}
	})
	t.Run("genuine first", func(t *testing.T) {
		f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
		h, _, runs := stack(t, f, true)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, f.signed("msg_next", body))
		if w.Code != http.StatusCreated {
			t.Fatalf("genuine delivery: %d, want 201", w.Code)
		}
		w = httptest.NewRecorder()
		h.ServeHTTP(w, withQuery(f.signed("msg_next", body), "x=1"))
		checkProblem(t, w, http.StatusBadRequest, standardwebhooks.ProblemQueryNotSigned)
		if *runs != 1 {
			t.Errorf("ingest ran %d times, want once", *runs)
		}
	})
}
