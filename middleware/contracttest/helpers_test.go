package contracttest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// ingest is a receiving handler as a team would write it: it stores the
// feature (here: counts it), sets a session cookie and answers 201 naming
// the feature and the execution.
type ingest struct {
	runs atomic.Int64
	// work is how long each execution takes, so that concurrent duplicates
	// really overlap it.
	work time.Duration
	// noCookie leaves the session cookie out of the answer.
	noCookie bool
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
	if !h.noCookie {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
	}
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"stored": []any{f.ID}, "execution": n})
}

func (h *ingest) executions() int { return int(h.runs.Load()) }

// ringValidator rejects a Feature whose Polygon has a ring that is not
// closed: a stand-in for geojson.RequestValidator, which production wires
// here, so that these tests do not depend on the geojson package.
var ringValidator = middleware.ValidatorFunc(func(_ *http.Request, body []byte) error {
	var f struct {
		Geometry *struct {
			Type        string          `json:"type"`
			Coordinates json.RawMessage `json:"coordinates"`
		} `json:"geometry"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if f.Geometry == nil || f.Geometry.Type != "Polygon" {
		return nil
	}
	var rings [][][]float64
	if err := json.Unmarshal(f.Geometry.Coordinates, &rings); err != nil {
		return fmt.Errorf("/geometry/coordinates: %w", err)
	}
	for i, ring := range rings {
		if len(ring) < 4 || !slices.Equal(ring[0], ring[len(ring)-1]) {
			return fmt.Errorf("/geometry/coordinates/%d: a linear ring needs 4 or more positions, the first and last identical", i)
		}
	}
	return nil
})

// wrapped returns h behind the middleware, with store and a validator, as
// the package documentation wires it.
func wrapped(t testing.TB, store keystore.Store, h http.Handler) http.Handler {
	t.Helper()
	idem, err := middleware.New(store, middleware.Config{Validator: ringValidator})
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return idem.Handler(h)
}

func newStore() keystore.Store { return new(memstore.Store) }

// forgetfulStore acquires every key and keeps nothing: the middleware in
// front of it runs the handler for every request.
type forgetfulStore struct{}

func (s *forgetfulStore) Claim(_ context.Context, _ string, a keystore.ClaimArgs) (keystore.Claim, error) {
	return keystore.Claim{Acquired: true, State: keystore.InFlight, Fingerprint: a.Fingerprint}, nil
}
func (s *forgetfulStore) Extend(context.Context, string, keystore.Token, time.Duration) (time.Duration, error) {
	return 0, nil
}
func (s *forgetfulStore) Complete(context.Context, string, keystore.Token, []byte, time.Duration) error {
	return nil
}
func (s *forgetfulStore) Release(context.Context, string, keystore.Token) error { return nil }

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

// wrappedWithout is wrapped without the validator.
func wrappedWithout(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	idem, err := middleware.New(newStore(), middleware.Config{})
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return idem.Handler(h)
}

// checkThenSetStore has the bug nearly every idempotency library has had:
// Claim reads the key, and only later, in a separate step, takes it, so
// concurrent Claims of an absent key can all acquire it.
type checkThenSetStore struct {
	mu      sync.Mutex
	keys    map[string]*checkThenSetEntry
	checked map[string]int // claims of each key that found it absent
}

type checkThenSetEntry struct {
	fp    keystore.Fingerprint
	token keystore.Token // zero once completed
	rec   []byte
}

func (s *checkThenSetStore) Claim(_ context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	fp := a.Fingerprint
	s.mu.Lock()
	e, ok := s.keys[key]
	var c keystore.Claim
	switch {
	case ok && e.token != 0:
		c = keystore.Claim{State: keystore.InFlight, Fingerprint: e.fp, LeaseRemaining: time.Second}
	case ok:
		c = keystore.Claim{State: keystore.Completed, Fingerprint: e.fp, Record: e.rec}
	}
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	// The window between the check and the set: held open until a second
	// claim of the key has passed the check too (or half a second has gone by),
	// so that the bug shows however slowly a loaded machine schedules the
	// concurrent duplicates.
	s.mu.Lock()
	if s.checked == nil {
		s.checked = map[string]int{}
	}
	s.checked[key]++
	s.mu.Unlock()
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		both := s.checked[key] >= 2
		s.mu.Unlock()
		if both {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]*checkThenSetEntry{}
	}
	s.keys[key] = &checkThenSetEntry{fp: fp, token: a.Token}
	return keystore.Claim{Acquired: true, State: keystore.InFlight, Fingerprint: fp}, nil
}

func (s *checkThenSetStore) held(key string, token keystore.Token) *checkThenSetEntry {
	if e := s.keys[key]; e != nil && e.token == token {
		return e
	}
	return nil
}

func (s *checkThenSetStore) Extend(_ context.Context, key string, token keystore.Token, _ time.Duration) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held(key, token) == nil {
		return 0, keystore.ErrLeaseLost
	}
	return 0, nil
}

func (s *checkThenSetStore) Complete(_ context.Context, key string, token keystore.Token, rec []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.held(key, token)
	if e == nil {
		return keystore.ErrLeaseLost
	}
	e.token, e.rec = 0, bytes.Clone(rec)
	return nil
}

func (s *checkThenSetStore) Release(_ context.Context, key string, token keystore.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held(key, token) == nil {
		return keystore.ErrLeaseLost
	}
	delete(s.keys, key)
	return nil
}
