package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// A claim that waits for a batch statement, whose caller gives up while
// the batch statement still runs (it runs detached, under its own timeout:
// see batchTimeout), has an unknown outcome: the batch may still acquire
// the key for the caller's token, before or after the caller's Release of
// that token reaches the database. Either way, once the Release has
// returned and the batch has ended, the key is free: a Claim with another
// token acquires it at once (it does not stay in flight for the batch
// claim's lease of a minute), and the released token is fenced.
//
// The batch statement is held up on a row lock: an uncommitted insert of
// another key of the batch, by a transaction of the test's own. The batch
// inserts its keys in key order, so the order of the two keys decides
// whether it inserts the abandoned claim's key before it waits
// (InsertFirst: the Release then waits for the batch's transaction and
// finds the key held by its token) or after (ReleaseFirst: the Release
// finds no row and leaves a fence, which the batch's insert then meets).
func TestBatchedClaimOutlivingItsCaller(t *testing.T) {
	for _, order := range []string{"ReleaseFirst", "InsertFirst"} {
		t.Run(order, func(t *testing.T) {
			testBatchedClaimOutlivingItsCaller(t, order == "InsertFirst")
		})
	}
}

func testBatchedClaimOutlivingItsCaller(t *testing.T, insertFirst bool) {
	admin := newPool(t, 6, nil)
	// Two connections: one claim statement in flight at a time, the others
	// batched.
	pool := newPool(t, 2, nil)
	s := newStore(t, pool, pgstore.Config{Schema: newSchema(t, admin)})
	ctx := testCtx(t)

	prefix := keystoretest.Key(t)[:32]
	inFlight, first, second := prefix+"-0", prefix+"-1", prefix+"-2"
	abandoned, blocked := second, first // the batch waits on blocked before it gets to abandoned
	if insertFirst {
		abandoned, blocked = first, second
	}

	// lock inserts key, uncommitted, in a transaction of its own, which the
	// caller ends; it returns the transaction's backend.
	lock := func(key string) (pgx.Tx, uint32) {
		tx, err := admin.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		if _, err := tx.Exec(ctx, "INSERT INTO "+s.Table()+" (key, fingerprint, token, expires_at) VALUES ($1, $2, 1, clock_timestamp())", key, fp[:]); err != nil {
			t.Fatal(err)
		}
		return tx, tx.Conn().PgConn().PID()
	}
	type result struct {
		c   keystore.Claim
		err error
	}
	claimAsync := func(ctx context.Context, key string, tok keystore.Token) <-chan result {
		ch := make(chan result, 1)
		go func() {
			c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: tok})
			ch <- result{c, err}
		}()
		return ch
	}

	// The one claim statement the pool allows waits on a row lock, so the
	// next claims wait for a batch.
	lockA, pidA := lock(inFlight)
	inFlightDone := claimAsync(ctx, inFlight, keystore.NewToken())
	waitBlockedBy(t, admin, pidA, inFlightDone)

	lockB, pidB := lock(blocked)
	abandonCtx, abandon := context.WithCancel(ctx)
	defer abandon()
	tok := keystore.NewToken()
	abandonedDone := claimAsync(abandonCtx, abandoned, tok)
	blockedDone := claimAsync(ctx, blocked, keystore.NewToken())
	waitFor(t, "both claims waiting for a batch", func() bool { return pgstore.ClaimsWaiting(s) == 2 })

	// The claim in flight ends; the batch statement of the other two starts
	// and waits on blocked's row lock.
	if err := lockA.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-inFlightDone; r.err != nil || !r.c.Acquired {
		t.Fatalf("the claim in flight: %+v, %v; want it acquired", r.c, r.err)
	}
	waitBlockedBy(t, admin, pidB, blockedDone)

	// The abandoned claim's caller gives up while the batch runs, and
	// releases its token, as the middleware does.
	abandon()
	if r := <-abandonedDone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the abandoned claim returned %+v, %v; want context.Canceled", r.c, r.err)
	}
	released := make(chan error, 1)
	go func() { released <- s.Release(ctx, abandoned, tok) }()
	if insertFirst {
		// The batch has inserted the abandoned claim's key: the Release
		// waits for the batch's transaction.
		waitBlockedBy(t, admin, blockedBackend(t, admin, pidB), released)
	} else if err := <-released; !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("Release of the key the batch has not reached: %v, want ErrLeaseLost (a fence)", err)
	}

	// The batch goes on, and ends.
	if err := lockB.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-blockedDone; r.err != nil || !r.c.Acquired {
		t.Fatalf("the other claim of the batch: %+v, %v; want it acquired", r.c, r.err)
	}
	if insertFirst {
		if err := <-released; err != nil {
			t.Fatalf("Release of the key the batch acquired for the token: %v, want nil", err)
		}
	}

	// The key is free, and the token fenced.
	if e, err := s.Inspect(ctx, abandoned); err != nil || (e.State != keystore.Absent && e.State != keystore.Released) {
		t.Errorf("after the Release and the batch the key is %v (%v), want absent or released", e.State, err)
	}
	if c, err := s.Claim(ctx, abandoned, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: tok}); !errors.Is(err, keystore.ErrLeaseLost) || c.Acquired {
		t.Errorf("Claim with the released token: acquired %v, %v; want ErrLeaseLost", c.Acquired, err)
	}
	if c := claim(t, s, abandoned, time.Minute, acquire); c.TookOver {
		t.Errorf("the next claim took over a lease: the batch's claim held the key after the Release")
	}
}

// blockedBackend returns the backend that waits for a lock held by the
// backend pid, failing the test if there is none or more than one.
func blockedBackend(t *testing.T, pool *pgxpool.Pool, pid uint32) uint32 {
	t.Helper()
	rows, err := pool.Query(testCtx(t), "SELECT pid FROM pg_stat_activity WHERE $1::integer = ANY (pg_blocking_pids(pid))", pid)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[uint32])
	if err != nil || len(pids) != 1 {
		t.Fatalf("backends waiting for %d: %v (%v), want one", pid, pids, err)
	}
	return pids[0]
}

// waitFor polls cond until it holds, failing the test after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s never happened", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
