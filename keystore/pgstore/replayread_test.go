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
	for _, tc := range []struct {
		name   string
		cfg    pgstore.Config
		client string
	}{{"Unbounded", pgstore.Config{}, ""}, {"ClientBound", pgstore.Config{ClientKeys: 10, ClientWindow: time.Hour}, "c"}} {
		t.Run(tc.name, func(t *testing.T) { replayUnderShareLock(t, tc.cfg, tc.client) })
	}
}

func replayUnderShareLock(t *testing.T, cfg pgstore.Config, client string) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, cfg)
	ctx := testCtx(t)
	args := func() keystore.ClaimArgs {
		a := args(time.Minute)
		a.Client = client
		return a
	}
	key, first := keystoretest.Key(t), args()
	c, err := s.Claim(ctx, key, first)
	if err != nil || !c.Acquired {
		t.Fatalf("first claim: %v %v", c.State, err)
	}
	if err := s.Complete(ctx, key, first.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Claim(ctx, key, args()); err != nil || c.State != keystore.Completed {
		t.Fatalf("replay: %v %v", c.State, err)
	}

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
	if c, err := s.Claim(wctx, keystoretest.Key(t), args()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a new key's claim under the SHARE lock: %v %v, want it to wait until its deadline", c.State, err)
	}

	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	r, err := s.Claim(rctx, key, args())
	if err != nil || r.State != keystore.Completed {
		t.Fatalf("a replay under the SHARE lock: %v %v after %v, want the record at once", r.State, err, time.Since(start))
	}
}
