package pgstore_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// What all clients together add is bounded by MaxKeys: once the table
// holds that many rows, a new key is refused with a store FullError (not
// a client's), inserting nothing, whose RetryAfter is when the earliest
// row can be pruned; a replay and a key in flight are answered as usual;
// and once rows are deleted, new keys are taken again.
func TestMaxKeysRefusesNewKeys(t *testing.T) {
	pool := newPool(t, 4, nil)
	const bound, retention = 30, time.Hour
	s := newStore(t, pool, pgstore.Config{MaxKeys: bound, ClientKeys: 1 << 20})
	ctx := testCtx(t)
	newArgs := func() keystore.ClaimArgs {
		a := args(time.Minute)
		a.Client = "c"
		return a
	}
	prefix := keystoretest.Key(t)[:16]
	inFlight := prefix + "in-flight"
	if c, err := s.Claim(ctx, inFlight, newArgs()); err != nil || !c.Acquired {
		t.Fatalf("claim: %v %v", c.State, err)
	}
	var done string
	var fe *keystore.FullError
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal after %d new keys", i)
		}
		key, a := prefix+strconv.Itoa(i), newArgs()
		c, err := s.Claim(ctx, key, a)
		if errors.As(err, &fe) {
			var n int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()+" WHERE key = $1", key).Scan(&n); err != nil || n != 0 {
				t.Fatalf("a refused key has %d rows (%v)", n, err)
			}
			t.Logf("refused after %d new keys: %v", i, fe)
			break
		}
		if err != nil || !c.Acquired {
			t.Fatalf("claim %d: %v %v", i, c.State, err)
		}
		if err := s.Complete(ctx, key, a.Token, jsonBytes("{}"), retention); err != nil {
			t.Fatal(err)
		}
		done = key
		if i >= bound {
			time.Sleep(20 * time.Millisecond) // the statistics trail: wait for them, not fill the table
		}
	}
	if fe.Client || fe.RetryAfter <= time.Minute || fe.RetryAfter > time.Minute+2*time.Minute {
		t.Fatalf("refusal %+v: want a store's (Client false), RetryAfter the in-flight key's end plus the grace", fe)
	}
	if c, err := s.Claim(ctx, done, newArgs()); err != nil || c.State != keystore.Completed {
		t.Fatalf("a replay while full: %v %v", c.State, err)
	}
	if c, err := s.Claim(ctx, inFlight, newArgs()); err != nil || c.State != keystore.InFlight || c.Acquired {
		t.Fatalf("a duplicate in flight while full: %v %v", c.State, err)
	}
	if _, err := pool.Exec(ctx, "DELETE FROM "+s.Table()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := s.Claim(ctx, keystoretest.Key(t), newArgs())
		if err == nil && c.Acquired {
			break
		}
		if !errors.As(err, &fe) || time.Now().After(deadline) {
			t.Fatalf("after the rows were deleted: %v %v; want the key acquired", c.State, err)
		}
	}
}
