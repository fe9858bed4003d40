package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// recordStore reports every key as completed with its record, or with raw
// bytes when they are set.
type recordStore struct {
	failingStore
	rec record.Record
	raw []byte
}

func (s *recordStore) Claim(_ context.Context, _ string, a keystore.ClaimArgs) (keystore.Claim, error) {
	enc := s.raw
	if enc == nil {
		enc = record.Append(nil, s.rec)
	}
	return keystore.Claim{State: keystore.Completed, Fingerprint: a.Fingerprint, Record: enc}, nil
}

// A store returns a record as opaque bytes: bytes that are not a record
// encoding (a store's bug, data damaged at rest) must never make a replay
// panic: the replay answers a problem instead.
func TestReplayOfCorruptRecordNeverPanics(t *testing.T) {
	good := record.Append(nil, record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("{}")})
	for _, raw := range [][]byte{{}, {0x80}, good[:3], {0x92, 0x03, 0x05, 0x01}} {
		t.Run(fmt.Sprintf("%x", raw), func(t *testing.T) {
			store := &recordStore{raw: raw}
			m := newMiddleware(t, store, middleware.Config{})
			if p := serveRecovering(m.Handler(newCounter()), httptest.NewRecorder(), post("k1", feature)); p != nil {
				t.Fatalf("replay of the bytes %x panicked: %v", raw, p)
			}
			wantProblem(t, serve(m.Handler(newCounter()), post("k1", feature)), http.StatusInternalServerError, middleware.ProblemNotRecorded)
		})
	}
}

// A record whose status is outside 200–599 (a status 0 from a handler that
// recorded its own response without setting one, say) must never make a
// replay panic: the replay answers a problem instead.
func TestReplayOfInvalidStatusNeverPanics(t *testing.T) {
	for _, status := range []int{0, -1, 99, 100, 101, 199, 600, 1000} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var ev events
			store := &recordStore{rec: record.Record{StatusCode: status, Body: []byte("x")}}
			m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
			if p := serveRecovering(m.Handler(newCounter()), httptest.NewRecorder(), post("k1", feature)); p != nil {
				t.Fatalf("replay of a record with status %d panicked: %v", status, p)
			}
			w := serve(m.Handler(newCounter()), post("k1", feature))
			wantProblem(t, w, http.StatusInternalServerError, middleware.ProblemNotRecorded)
			if len(ev.all) == 0 || ev.all[len(ev.all)-1].Status != http.StatusInternalServerError {
				t.Errorf("events %+v, want the status answered, 500", ev.all)
			}
		})
	}
	// Every status in 200–599 is replayed as recorded.
	for _, status := range []int{200, 299, 304, 422, 599} {
		store := &recordStore{rec: record.Record{StatusCode: status}}
		m := newMiddleware(t, store, middleware.Config{})
		if w := serve(m.Handler(newCounter()), post("k1", feature)); w.Code != status {
			t.Errorf("replay of %d: %d", status, w.Code)
		}
	}
}

// recordSizes is a memstore that remembers the encoded size of each record
// completed.
type recordSizes struct {
	memstore.Store
	mu    sync.Mutex
	sizes []int
}

func (s *recordSizes) Complete(ctx context.Context, key string, tok keystore.Token, rec []byte, ret time.Duration) error {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(rec))
	s.mu.Unlock()
	return s.Store.Complete(ctx, key, tok, rec, ret)
}

// MaxRecordBytes bounds the whole record, status, headers and body
// encoded, not the body alone, so that a store's reservation of that size
// (memstore's) always holds it. A response over it is sent in full and
// recorded as a too-large problem under its status.
func TestRecordLimitCountsHeaders(t *testing.T) {
	store := new(recordSizes)
	m := newMiddleware(t, store, middleware.Config{})
	body := strings.Repeat("x", middleware.DefaultMaxRecordBytes)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Location", "/features/f1")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, body)
	})
	if w := serve(m.Handler(h), post("k1", feature)); w.Code != http.StatusCreated || w.Body.Len() != len(body) {
		t.Fatalf("%d with %d bytes, want 201 and the whole body", w.Code, w.Body.Len())
	}
	for _, n := range store.sizes {
		if n > middleware.DefaultMaxRecordBytes {
			t.Fatalf("a record of %d bytes stored, over MaxRecordBytes %d", n, middleware.DefaultMaxRecordBytes)
		}
	}
	w := serve(m.Handler(h), post("k1", feature))
	if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d replayed=%q, want the recorded 201", w.Code, w.Header().Get("Idempotent-Replayed"))
	}
	wantProblem(t, w, http.StatusCreated, middleware.ProblemNotRecorded)
}
