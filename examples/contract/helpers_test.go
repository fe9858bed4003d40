package contract_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// These helpers came with the retryablehttp tests from
// middleware/contracttest: flakyStore moved (nothing there uses it any
// more); ingest, wrapped and newStore are copies, since a test file cannot
// be imported. wrapped has no validator: every feature these tests send is
// a Point, which contracttest's ring validator lets through.

// ingest is a receiving handler as a team would write it: it stores the
// feature (here: counts it), sets a session cookie and answers 201 naming
// the feature and the execution.
type ingest struct {
	runs atomic.Int64
	// work is how long each execution takes, so that concurrent duplicates
	// really overlap it.
	work time.Duration
}

func (h *ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var f struct {
		ID any `json:"id"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	n := h.runs.Add(1)
	time.Sleep(h.work)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/features/1")
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"stored": []any{f.ID}, "execution": n})
}

func (h *ingest) executions() int { return int(h.runs.Load()) }

// wrapped returns h behind the middleware, with store.
func wrapped(t testing.TB, store keystore.Store, h http.Handler) http.Handler {
	t.Helper()
	idem, err := middleware.New(store, middleware.Config{})
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return idem.Handler(h)
}

func newStore() keystore.Store { return new(memstore.Store) }

// flakyStore fails its first failures Claims, as a store that is briefly
// unreachable, and then behaves as the store it wraps.
type flakyStore struct {
	keystore.Store
	failures atomic.Int64
}

var errUnreachable = errors.New("flaky store: unreachable")

func (s *flakyStore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	if s.failures.Add(-1) >= 0 {
		return keystore.Claim{}, errUnreachable
	}
	return s.Store.Claim(ctx, key, a)
}
