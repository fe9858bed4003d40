package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// A replay is a plain read of the key's row: its statement sets up no
// write, so it is answered while another transaction holds the table in
// SHARE mode, which every writer waits for (a statement that merely
// contains an INSERT takes the table's ROW EXCLUSIVE lock, and opens its
// indexes for it, even when it inserts nothing). A new key's claim, a
// writer, waits.
func TestReplayIsAPlainRead(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	claim(t, s, key, time.Minute, keystore.Completed)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "LOCK TABLE "+s.Table()+" IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}

	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if c, err := s.Claim(wctx, keystoretest.Key(t), args(time.Minute)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a new key's claim under the SHARE lock: %v %v, want it to wait until its deadline", c.State, err)
	}

	rctx, cancel := context.WithTimeout(ctx, 15*time.Second) // long for a loaded machine; a replay that waits for the lock waits it out
	defer cancel()
	start := time.Now()
	r, err := s.Claim(rctx, key, args(time.Minute))
	if err != nil || r.State != keystore.Completed {
		t.Fatalf("a replay under the SHARE lock: %v %v after %v, want the record at once", r.State, err, time.Since(start))
	}
}
