package middleware_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// waitingMem embeds *memstore.Store, and so every method of the store that
// never waits, but adds a wait to Claim (a remote call, a queue): it must
// not pass for memstore, or its calls run without Config.StoreTimeout.
type waitingMem struct {
	*memstore.Store
}

func (s waitingMem) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	<-ctx.Done() // the remote end never answers
	return keystore.Claim{}, ctx.Err()
}

func TestEmbeddedMemstoreIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &waitingMem{Store: new(memstore.Store)}
		m := newMiddleware(t, store, middleware.Config{StoreTimeout: 300 * time.Millisecond})
		start := time.Now()
		wantProblem(t, serve(m.Handler(newCounter()), post("k1", feature)), http.StatusServiceUnavailable, middleware.ProblemStoreDown)
		if took := time.Since(start); took > 300*time.Millisecond {
			t.Errorf("answered after %v, want within the 300ms StoreTimeout", took)
		}
		// The claim that timed out is released in the background, in case
		// it acquired the key; it did not, so nothing is given up.
		shutdown(t, m)
	})
}
