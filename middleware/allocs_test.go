package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestAllocationBudget pins the allocations the middleware adds to a
// request, in process with memstore, over the bare handler of
// BenchmarkMiddleware given the same requests (issue 24's budget: a first
// call at most bare+8, a replay at most bare+4). The counts are
// deterministic; a change that adds an allocation per request fails here
// and must either be cut or raise the budget deliberately.
func TestAllocationBudget(t *testing.T) {
	const (
		firstCallBudget = 8 // allocations over the bare handler
		replayBudget    = 2
	)
	store := memstore.New(memstore.Config{MaxEntries: 1 << 16, MaxBytes: 1 << 28})
	m, err := middleware.New(store, middleware.Config{})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := m.Handler(ingestHandler)
	n := 0
	measure := func(h http.Handler, key func() string) float64 {
		return testing.AllocsPerRun(200, func() {
			r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(feature))
			r.Header.Set("Idempotency-Key", key())
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				t.Fatalf("status %d", w.Code)
			}
		})
	}
	newKey := func() string { n++; return "key-" + strconv.Itoa(n) }
	bare := measure(ingestHandler, newKey)
	first := measure(wrapped, newKey)
	replay := measure(wrapped, func() string { return "hot-key" })
	t.Logf("allocations per request: bare %v, first call %v (+%v), replay %v (+%v)", bare, first, first-bare, replay, replay-bare)
	if first-bare > firstCallBudget {
		t.Errorf("first call: %v allocations over the bare handler's %v, budget %d", first-bare, bare, firstCallBudget)
	}
	if replay-bare > replayBudget {
		t.Errorf("replay: %v allocations over the bare handler's %v, budget %d", replay-bare, bare, replayBudget)
	}
}
