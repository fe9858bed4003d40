package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// The middleware renews a request's lease while its handler runs. When the
// handler completes the key in its own transaction (InTx, CompleteTx), the
// renewal's UPDATE can wait on that transaction's row lock and then meet the
// committed record: it must succeed, not report the lease lost (which made
// the middleware cancel the handler with ErrLeaseLost after a successful
// commit). A renewal that meets a rollback extends the lease as usual. Both
// hold whatever the sessions' default isolation (the renewal's UPDATE then
// fails with a serialization failure first, and the store retries it).
func TestExtendMeetsOwnCompleteTx(t *testing.T) {
	for _, level := range append([]string{"read committed"}, isolationLevels...) {
		for _, commit := range []bool{true, false} {
			name := map[bool]string{true: "Commit", false: "Rollback"}[commit]
			t.Run(level+"/"+name, func(t *testing.T) {
				testExtendMeetsOwnCompleteTx(t, isolationPool(t, level), commit, name)
			})
		}
	}
}

func testExtendMeetsOwnCompleteTx(t *testing.T, pool *pgxpool.Pool, commit bool, name string) {
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)

	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, keystore.Acquired)
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := s.CompleteTx(ctx, tx, key, c.Token, record(`"x"`), time.Hour); err != nil {
		t.Fatalf("CompleteTx: %v", err)
	}
	pid := tx.Conn().PgConn().PID()
	extended := make(chan error, 1)
	go func() { extended <- s.Extend(ctx, key, c.Token, time.Minute) }()
	waitBlockedBy(t, pool, pid, extended)
	if commit {
		err = tx.Commit(ctx)
	} else {
		err = tx.Rollback(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := <-extended; err != nil {
		t.Fatalf("Extend that waited for its own CompleteTx's %s: %v, want nil", name, err)
	}
	if commit {
		got := claim(t, s, key, time.Minute, keystore.Completed)
		if string(got.Record.Body) != `"x"` {
			t.Errorf("record = %s, want the committed one", got.Record.Body)
		}
	} else {
		in := claim(t, s, key, time.Minute, keystore.InFlight)
		if in.LeaseRemaining < 30*time.Second {
			t.Errorf("after the rollback the lease has %v left; the Extend did not take effect", in.LeaseRemaining)
		}
	}
}
