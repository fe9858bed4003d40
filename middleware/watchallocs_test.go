package middleware_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// watchingMemstore is blockingMemstore that watches the context of each
// call as pgx watches a query's (context.AfterFunc, stopped when the call
// returns), so that what the middleware's bounded contexts cost such a
// store shows in process.
type watchingMemstore struct{ blockingMemstore }

// watch registers a function on ctx, as pgx's ContextWatcher does for a
// context that can end, and returns its stop.
func watch(ctx context.Context) func() bool {
	if ctx.Done() == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, func() {})
}

func (s watchingMemstore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	defer watch(ctx)()
	return s.Store.Claim(ctx, key, a)
}

func (s watchingMemstore) Complete(ctx context.Context, key string, tok keystore.Token, rec []byte, retention time.Duration) error {
	defer watch(ctx)()
	return s.Store.Complete(ctx, key, tok, rec, retention)
}

// TestWatchedStoreAllocationBudget pins what bounding the calls of a store
// that watches their contexts (pgstore, through pgx) costs a request over
// memstore, calls sharing a bucket (see TestStoreTimeoutAllocationBudget):
// the bound itself (1), and per call the context package's afterFuncCtx
// and stop (2), the bucket's context and its children found by the
// context package as a context.WithTimeout's. When the bound's contexts
// hooked AfterFunc themselves, a first call cost 14 and a replay 8.
//
// Raised from 5 to 6 for a first call, its own count unchanged (37):
// memstore's first call no longer allocates its detached context
// (uncanceled, in the exchange), while a store that can block still makes
// its own before the claim (see TestStoreTimeoutAllocationBudget).
func TestWatchedStoreAllocationBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			firstCallBudget = 6
			replayBudget    = 3
		)
		newStore := func() *memstore.Store { return memstore.New(memstore.Config{MaxEntries: 1 << 16, MaxBytes: 1 << 28}) }
		newKey := keySeq()
		measure := func(store keystore.Store, key func() string) float64 {
			m, err := middleware.New(store, middleware.Config{})
			if err != nil {
				t.Fatal(err)
			}
			return allocsPerRequest(t, m.Handler(ingestHandler), key)
		}
		for _, c := range []struct {
			name   string
			key    func() string
			budget int
		}{{"first call", newKey, firstCallBudget}, {"replay", hotKey, replayBudget}} {
			free := measure(newStore(), c.key)
			watched := measure(watchingMemstore{blockingMemstore{newStore()}}, c.key)
			budget := c.budget
			if raceEnabled {
				budget++ // the claim token's buffer (see raceEnabled)
			}
			t.Logf("%s: allocations per request %v on memstore, %v watched and bounded by StoreTimeout (+%v)", c.name, free, watched, watched-free)
			if watched-free > float64(budget) {
				t.Errorf("%s: bounding a watching store's calls costs %v allocations per request, budget %d", c.name, watched-free, budget)
			}
		}
	})
}
