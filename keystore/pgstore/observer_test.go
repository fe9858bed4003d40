package pgstore_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestObserverSeesCompletionsInTx: the completions InTx and CompleteTx
// make in the handler's transaction, which the middleware does not make (so
// its StoreObserver does not see them),
// are reported to Config.Observer, successful or fenced off.
func TestObserverSeesCompletionsInTx(t *testing.T) {
	pool := newPool(t, 4, nil)
	var mu sync.Mutex
	var calls []middleware.StoreCall
	s := newStore(t, pool, pgstore.Config{Observer: func(c middleware.StoreCall) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
	}})

	key := keystoretest.Key(t)
	ctx, hold := holdCtx(t, key, claim(t, s, key, time.Minute, acquire))
	if _, err := s.InTx(ctx, hold, func(pgx.Tx) (pgstore.Record, error) { return jsonRecord(`{}`), nil }); err != nil {
		t.Fatalf("InTx: %v", err)
	}
	// A stale token: CompleteTx is refused, and that is reported too.
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if err := s.CompleteTx(t.Context(), tx, &keystore.Hold{Key: key, Token: 1 << 40, Retention: time.Minute}, jsonRecord(`{}`)); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("CompleteTx with a stale token: %v, want ErrLeaseLost", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("Observer saw %d calls, want 2 (InTx's completion, CompleteTx's refusal): %+v", len(calls), calls)
	}
	for i, c := range calls {
		if c.Op != middleware.OpComplete || c.Latency <= 0 || c.Context == nil || (c.Err == nil) != (i == 0) {
			t.Errorf("call %d: %+v, want op complete, a latency, a context, and an error only for the stale token", i, c)
		}
	}
	if !errors.Is(calls[1].Err, keystore.ErrLeaseLost) {
		t.Errorf("the refused completion reported %v, want ErrLeaseLost", calls[1].Err)
	}
}
