package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestSectionMemstoreHoldsTheRun: section 1's memory store takes every
// first call of a full run (every round's requests and warm-ups at every
// client count) without refusing one: a store too small for the run
// answered 503 store-full at 64 clients once requests were no longer
// stopped by the time bound, and past three quarters full its client
// bound would bite. The keys go through the middleware with the
// section's body and handler, so the records are the section's size.
func TestSectionMemstoreHoldsTheRun(t *testing.T) {
	o := defaultOptions(false)
	n := httpStoreKeys(&o)
	if n <= 100_000 {
		t.Fatalf("a full run makes %d keys; this test is meant to prove a run past memstore's default 100,000", n)
	}
	h, err := wrap(memstore.New(httpMemstoreConfig(&o)), middleware.Config{}, ingestHandler)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(feature))
		r.Header.Set("Content-Type", "application/geo+json")
		r.Header.Set("Idempotency-Key", "k-"+strconv.Itoa(i))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusCreated {
			t.Fatalf("first call %d of %d: %d %.200s", i+1, n, w.Code, w.Body.String())
		}
	}
}
