package contracttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// ingest is a receiving handler as a team would write it: it stores the
// feature (here: counts it), sets a session cookie and answers 201 naming
// the feature and the execution.
type ingest struct {
	runs atomic.Int64
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
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/features/1")
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"stored": []any{f.ID}, "execution": n})
}

func (h *ingest) executions() int { return int(h.runs.Load()) }

// wrapped returns h behind the middleware, with a memory store and the
// GeoJSON validator, as the package documentation wires it.
func wrapped(t testing.TB, store keystore.Store, h http.Handler) http.Handler {
	t.Helper()
	idem, err := middleware.New(store, middleware.Config{Validator: geojson.RequestValidator{}})
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return idem.Handler(h)
}

func newStore() keystore.Store { return new(memstore.Store) }

// forgetfulStore acquires every key and keeps nothing: the middleware in
// front of it runs the handler for every request.
type forgetfulStore struct{ token atomic.Uint64 }

func (s *forgetfulStore) Claim(context.Context, string, keystore.Fingerprint, time.Duration) (keystore.Claim, error) {
	return keystore.Claim{State: keystore.Acquired, Token: keystore.Token(s.token.Add(1))}, nil
}
func (s *forgetfulStore) Extend(context.Context, string, keystore.Token, time.Duration) error {
	return nil
}
func (s *forgetfulStore) Complete(context.Context, string, keystore.Token, keystore.Record, time.Duration) error {
	return nil
}
func (s *forgetfulStore) Release(context.Context, string, keystore.Token) error { return nil }

// flakyStore fails its first failures Claims, as a store that is briefly
// unreachable, and then behaves as the store it wraps.
type flakyStore struct {
	keystore.Store
	failures atomic.Int64
}

var errUnreachable = errors.New("flaky store: unreachable")

func (s *flakyStore) Claim(ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (keystore.Claim, error) {
	if s.failures.Add(-1) >= 0 {
		return keystore.Claim{}, errUnreachable
	}
	return s.Store.Claim(ctx, key, fp, lease)
}

// cookieOnReplay is a broken wrapper: it adds a cookie to every replay.
func cookieOnReplay(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&cookieWriter{ResponseWriter: w}, r)
	})
}

type cookieWriter struct{ http.ResponseWriter }

func (w *cookieWriter) WriteHeader(code int) {
	if w.Header().Get("Idempotent-Replayed") == "true" {
		w.Header().Add("Set-Cookie", "session=replayed")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *cookieWriter) Write(p []byte) (int, error) { return w.ResponseWriter.Write(p) }
