package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// An operator who empties the table with TRUNCATE … RESTART IDENTITY must
// not hand a stale owner's token back to its key. Tokens are the callers'
// (keystore.NewToken), never drawn from the token sequence the schema still
// has, so nothing the truncation restarts can issue one again: the claims
// after it hold tokens of their own, and the stale owner's late Complete is
// refused, not written over the new holder's work.
func TestTruncateRestartIdentityKeepsTokensUnique(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)

	key := keystoretest.Key(t)
	var before []keystore.Token
	for range 3 {
		before = append(before, claim(t, s, keystoretest.Key(t), time.Minute, acquire).Token)
	}
	stale := claim(t, s, key, time.Minute, acquire)
	before = append(before, stale.Token)

	if _, err := pool.Exec(ctx, "TRUNCATE "+s.Table()+" RESTART IDENTITY"); err != nil {
		t.Fatalf("TRUNCATE … RESTART IDENTITY: %v", err)
	}

	// The same claims as before the truncation.
	var after []keystore.Token
	for range 3 {
		after = append(after, claim(t, s, keystoretest.Key(t), time.Minute, acquire).Token)
	}
	cur := claim(t, s, key, time.Minute, acquire)
	after = append(after, cur.Token)
	for i := range after {
		if after[i] == before[i] {
			t.Errorf("claim %d after TRUNCATE … RESTART IDENTITY holds the token of claim %d before it (%d)", i, i, after[i])
		}
	}
	var held int64
	if err := pool.QueryRow(ctx, "SELECT token FROM "+s.Table()+" WHERE key = $1", key).Scan(&held); err != nil || keystore.Token(held) != cur.Token {
		t.Fatalf("the key is held by token %d (%v), want the current owner's %d", held, err, cur.Token)
	}
	if err := s.Complete(ctx, key, stale.Token, jsonBytes(`{"from":"stale"}`), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("stale owner's Complete after the truncation: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, key, cur.Token, jsonBytes(`{"from":"current"}`), time.Hour); err != nil {
		t.Fatalf("current owner's Complete: %v", err)
	}
	got := claim(t, s, key, time.Minute, keystore.Completed)
	if string(testkit.Decoded(got.Record).Body) != `{"from":"current"}` {
		t.Fatalf("record = %s, want the current owner's", testkit.Decoded(got.Record).Body)
	}
}
