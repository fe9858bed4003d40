package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

const feature = `{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"name":"a"}}`

// counter is an ingest handler that counts its executions per key and
// answers 201 with a body naming the execution.
type counter struct {
	mu    sync.Mutex
	runs  map[string]int
	total atomic.Int64
	// status, if set, is the status to answer instead of 201.
	status int
}

func newCounter() *counter { return &counter{runs: map[string]int{}} }

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := c.total.Add(1)
	c.mu.Lock()
	c.runs[r.Header.Get("Idempotency-Key")]++
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/features/f1")
	w.Header().Set("Set-Cookie", "session=secret")
	w.Header().Set("X-Not-Allowed", "1")
	status := c.status
	if status == 0 {
		status = http.StatusCreated
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"execution": n, "bytes": len(body)})
}

func newMiddleware(t testing.TB, store keystore.Store, cfg middleware.Config) *middleware.Middleware {
	t.Helper()
	m, err := middleware.New(store, cfg)
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return m
}

func post(key, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/geo+json")
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// wantProblem checks that w is a problem document of the given status and
// type, not to be cached, and returns it.
func wantProblem(t *testing.T, w *httptest.ResponseRecorder, status int, typ string) problemDoc {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	var p problemDoc
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", w.Body, err)
	}
	if p.Type != typ || p.Status != status || p.Title == "" || p.Detail == "" {
		t.Errorf("problem = %+v, want type %s, status %d, a title and a detail", p, typ, status)
	}
	return p
}

// failingStore fails every operation with err, or, when block is set,
// blocks until the context is done.
type failingStore struct {
	err   error
	block bool
	calls atomic.Int64
}

func (s *failingStore) wait(ctx context.Context) error {
	s.calls.Add(1)
	if s.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.err
}

func (s *failingStore) Claim(ctx context.Context, _ string, _ keystore.ClaimArgs) (keystore.Claim, error) {
	return keystore.Claim{}, s.wait(ctx)
}
func (s *failingStore) Extend(ctx context.Context, _ string, _ keystore.Token, _ time.Duration) (time.Duration, error) {
	return 0, s.wait(ctx)
}
func (s *failingStore) Complete(ctx context.Context, _ string, _ keystore.Token, _ []byte, _ time.Duration) error {
	return s.wait(ctx)
}
func (s *failingStore) Release(ctx context.Context, _ string, _ keystore.Token) error {
	return s.wait(ctx)
}

// spyStore counts calls to a memstore and can be told to misbehave.
type spyStore struct {
	memstore.Store
	completes, releases, extends atomic.Int64
	// extendNoop makes Extend succeed without extending (a renewal that is
	// lost on the way), extendLost makes it report the lease lost.
	extendNoop, extendLost bool
	// completeErr, if set, fails every Complete.
	completeErr error
}

func (s *spyStore) Extend(ctx context.Context, key string, tok keystore.Token, lease time.Duration) (time.Duration, error) {
	s.extends.Add(1)
	switch {
	case s.extendLost:
		return 0, keystore.ErrLeaseLost
	case s.extendNoop:
		return 0, nil
	}
	return s.Store.Extend(ctx, key, tok, lease)
}

func (s *spyStore) Complete(ctx context.Context, key string, tok keystore.Token, rec []byte, ret time.Duration) error {
	s.completes.Add(1)
	if s.completeErr != nil {
		return s.completeErr
	}
	return s.Store.Complete(ctx, key, tok, rec, ret)
}

func (s *spyStore) Release(ctx context.Context, key string, tok keystore.Token) error {
	s.releases.Add(1)
	return s.Store.Release(ctx, key, tok)
}

// events collects observer events.
type events struct {
	mu  sync.Mutex
	all []middleware.Event
}

func (e *events) observe(ev middleware.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) outcomes() []middleware.Outcome {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []middleware.Outcome
	for _, ev := range e.all {
		out = append(out, ev.Outcome)
	}
	return out
}

func equalBodies(t *testing.T, a, b *httptest.ResponseRecorder) {
	t.Helper()
	if a.Code != b.Code || !bytes.Equal(a.Body.Bytes(), b.Body.Bytes()) {
		t.Fatalf("responses differ:\n%d %s\n%d %s", a.Code, a.Body, b.Code, b.Body)
	}
}
