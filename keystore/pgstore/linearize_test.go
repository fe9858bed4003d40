package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// Every key's history under concurrent clients is linearizable, but for
// one allowance: a Claim's LeaseRemaining may be measured from the start of
// its statement (the claim SQL reads clock_timestamp() once, into clk, and
// may then wait for a concurrent Claim's insert to commit and report that
// claim's lease as expires_at - clk: longer than the lease, by the wait).
// Seen as "in flight (…, 26.47ms left)" for a lease of 20 ms, in a Claim that
// waited about 6 ms; the check allows it through
// LinearizableConfig.LeaseRemainingFromCallStart.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	s := newStore(t, newPool(t, 8, nil), pgstore.Config{})
	st := keystoretest.Linearizable(t, s, keystoretest.LinearizableConfig{LeaseRemainingFromCallStart: true})
	if st.TookOver == 0 || st.InFlight == 0 || st.Completed == 0 || st.LeaseLost == 0 {
		t.Errorf("the workload missed a case: %v", st)
	}
}

// The same while the test's own sessions are killed again and again
// (pg_terminate_backend, from a second pool, of the backends whose
// application_name is this test's): a statement cut off that way may or
// may not have committed.
func TestLinearizableBackendKills(t *testing.T) {
	t.Parallel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	app := "geoidem-linearize-" + hex.EncodeToString(b[:])

	pool := openPool(t, 8, func(cfg *pgxpool.Config) { cfg.ConnConfig.RuntimeParams["application_name"] = app })
	admin := newPool(t, 2, nil)
	s := newStore(t, pool, pgstore.Config{Schema: newSchema(t, admin)})

	var kills, killed int
	faults := func(ctx context.Context) {
		for {
			tm := time.NewTimer(50*time.Millisecond + mrand.N(200*time.Millisecond))
			select {
			case <-ctx.Done():
				tm.Stop()
				return
			case <-tm.C:
			}
			// One backend at random, or now and then all of them.
			q := `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM (
				SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY random() LIMIT $2) b`
			limit := 1
			if mrand.IntN(4) == 0 {
				limit = 100
			}
			var n int
			if err := admin.QueryRow(context.WithoutCancel(ctx), q, app, limit).Scan(&n); err != nil {
				t.Errorf("pg_terminate_backend: %v", err)
				return
			}
			kills++
			killed += n
		}
	}
	st := keystoretest.Linearizable(t, s, keystoretest.LinearizableConfig{Duration: 3 * time.Second, Faults: faults, LeaseRemainingFromCallStart: true})
	t.Logf("%d rounds of pg_terminate_backend killed %d backends", kills, killed)
	if killed == 0 || st.Unknown == 0 || st.Acquired == 0 {
		t.Errorf("no backend was killed, no call's outcome was unknown, or nothing was acquired (%d killed): %v", killed, st)
	}
}
