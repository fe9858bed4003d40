package ingest

import (
	"context"
	"errors"
	"github.com/geoidem/geoidem/internal/promtext"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type pingerFunc func(ctx context.Context) error

func (f pingerFunc) Ping(ctx context.Context) error { return f(ctx) }

func TestHealthReportsUnreachableStore(t *testing.T) {
	for _, c := range []struct {
		ping   pingerFunc
		status int
		word   string
	}{
		{func(context.Context) error { return nil }, http.StatusOK, `"reachable"`},
		{func(context.Context) error { return errors.New("dial tcp 127.0.0.1:6379: connection refused") }, http.StatusServiceUnavailable, `"unreachable"`},
		{func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, http.StatusServiceUnavailable, `"unreachable"`},
	} {
		w := httptest.NewRecorder()
		health(c.ping).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.word) {
			t.Errorf("health: %d %s, want %d with %s", w.Code, w.Body, c.status, c.word)
		}
	}
}

// The timing wrapper keeps keystore.NonBlocking when the store it wraps
// has it, and never claims it for a store that waits.
func TestTimedStoreKeepsNonBlocking(t *testing.T) {
	reg := new(promtext.Registry)
	ping := func(context.Context) error { return nil }
	if !keystore.IsNonBlocking(newTimedStore(new(memstore.Store), ping, reg)) {
		t.Error("timed memstore lost keystore.NonBlocking")
	}
	if keystore.IsNonBlocking(newTimedStore(waitingStore{new(memstore.Store)}, ping, new(promtext.Registry))) {
		t.Error("timed store that waits claims keystore.NonBlocking")
	}
}

// waitingStore forwards to a memstore through the keystore.Store interface,
// as a networked store's client would: it is not NonBlocking.
type waitingStore struct{ keystore.Store }
