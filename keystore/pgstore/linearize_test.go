package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/internal/testkit"
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
//
// The run must also cover every case (a takeover, a key found in flight,
// one found completed, a lost lease). On a loaded machine (a load average
// of 40 on two CPUs) the workload's 40 ms leases and 100 ms retention can
// run out before each call's statement returns: holders lose their leases
// before they complete, and no Claim finds a key completed. That is the
// workload's timing, not the store: the test then runs the check again
// with leases and retention doubled, at most twice, and fails if no run
// covered every case. Each run logs the load, the statements' latencies
// and whether the database's clock kept in step with the test's; a failed
// check says whether the checker gave up, the clocks disagreed, or the
// store's history is not linearizable, with the database's own log of
// every offending key (see linearizableRun).
func TestLinearizable(t *testing.T) {
	t.Parallel()
	tr := &stmtTracer{}
	admin := newPool(t, 2, nil)
	schema := newSchema(t, admin)
	s := newStore(t, newPool(t, 8, tr), pgstore.Config{Schema: schema})
	audit := installAudit(t, admin, s, schema)
	cfg := keystoretest.LinearizableConfig{LeaseRemainingFromCallStart: true}
	testkit.CoverAllCases(t, cfg, func(cfg keystoretest.LinearizableConfig) (keystoretest.LinearizableStats, string) {
		st := linearizableRun(t, s, tr, admin, audit, cfg)
		return st, testkit.MissedCases(st)
	})
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

	tr := &stmtTracer{}
	pool := openPool(t, 8, func(cfg *pgxpool.Config) {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
		cfg.ConnConfig.Tracer = tr
	})
	admin := newPool(t, 3, nil)
	schema := newSchema(t, admin)
	s := newStore(t, pool, pgstore.Config{Schema: schema})
	audit := installAudit(t, admin, s, schema)

	cfg := keystoretest.LinearizableConfig{Duration: 3 * time.Second, LeaseRemainingFromCallStart: true}
	testkit.CoverAllCases(t, cfg, func(cfg keystoretest.LinearizableConfig) (keystoretest.LinearizableStats, string) {
		var kills, killed int
		cfg.Faults = func(ctx context.Context) {
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
		st := linearizableRun(t, s, tr, admin, audit, cfg)
		t.Logf("%d rounds of pg_terminate_backend killed %d backends", kills, killed)
		var missed []string
		for _, c := range []struct {
			name string
			n    int
		}{{"a killed backend", killed}, {"a call of unknown outcome", st.Unknown}, {"an acquired key", st.Acquired}} {
			if c.n == 0 {
				missed = append(missed, c.name)
			}
		}
		return st, strings.Join(missed, ", ")
	})
}
