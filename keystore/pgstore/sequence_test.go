package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// An operator who empties the table with TRUNCATE … RESTART IDENTITY must not
// restart the token sequence: a token issued before the truncation would
// otherwise be issued again for the same key, and its stale owner's Complete
// would overwrite the new holder's work.
func TestTruncateRestartIdentityKeepsTokensUnique(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)

	key := keystoretest.Key(t)
	// Tokens 1, 2, 3 go to other keys; the stale owner holds the fourth.
	for range 3 {
		claim(t, s, keystoretest.Key(t), time.Minute, keystore.Acquired)
	}
	stale := claim(t, s, key, time.Minute, keystore.Acquired)

	if _, err := pool.Exec(ctx, "TRUNCATE "+s.Table()+" RESTART IDENTITY"); err != nil {
		t.Fatalf("TRUNCATE … RESTART IDENTITY: %v", err)
	}

	// The same number of claims as before the truncation: a restarted
	// sequence would hand the key the stale owner's token now.
	for range 3 {
		claim(t, s, keystoretest.Key(t), time.Minute, keystore.Acquired)
	}
	cur := claim(t, s, key, time.Minute, keystore.Acquired)
	if cur.Token == stale.Token {
		t.Errorf("after TRUNCATE … RESTART IDENTITY the key was claimed again with the stale owner's token %d", cur.Token)
	}
	if err := s.Complete(ctx, key, stale.Token, record(`{"from":"stale"}`), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("stale owner's Complete after the truncation: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, key, cur.Token, record(`{"from":"current"}`), time.Hour); err != nil {
		t.Fatalf("current owner's Complete: %v", err)
	}
	got := claim(t, s, key, time.Minute, keystore.Completed)
	if string(got.Record.Body) != `{"from":"current"}` {
		t.Fatalf("record = %s, want the current owner's", got.Record.Body)
	}
}
