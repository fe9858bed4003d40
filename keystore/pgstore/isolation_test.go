package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// isolationPool connects like newPool, with default_transaction_isolation
// set to level for this pool's sessions only (a connection parameter, never
// the server's or the database's setting).
func isolationPool(t *testing.T, level string) *pgxpool.Pool {
	t.Helper()
	pool := openPool(t, 16, func(cfg *pgxpool.Config) {
		cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got string
	if err := pool.QueryRow(ctx, "SHOW transaction_isolation").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != level {
		t.Fatalf("session isolation is %q, want %q", got, level)
	}
	return pool
}

var isolationLevels = []string{"repeatable read", "serializable"}

// Under a REPEATABLE READ or SERIALIZABLE default, concurrent claims of one
// key made PostgreSQL abort all but one with SQLSTATE 40001, which the
// middleware answers with 503. The store must give every caller its answer
// (acquired or in flight), whatever the sessions' default isolation.
func TestConcurrentClaimsUnderStricterIsolation(t *testing.T) {
	for _, level := range isolationLevels {
		t.Run(level, func(t *testing.T) {
			pool := isolationPool(t, level)
			s := newStore(t, pool, pgstore.Config{})
			for round := range 3 {
				t.Run(fmt.Sprintf("Absent/%d", round), func(t *testing.T) {
					claimRace(t, s, 32, keystoretest.Key(t), false)
				})
				t.Run(fmt.Sprintf("ExpiredLease/%d", round), func(t *testing.T) {
					key := keystoretest.Key(t)
					claim(t, s, key, time.Minute, acquire)
					expireLease(t, pool, s, key)
					claimRace(t, s, 32, key, true)
				})
			}
		})
	}
}

// The whole conformance suite holds under the stricter defaults too, the
// bound on each client's new keys included.
func TestConformanceUnderStricterIsolation(t *testing.T) {
	for _, level := range isolationLevels {
		t.Run(level, func(t *testing.T) {
			pool := isolationPool(t, level)
			keystoretest.Run(t, func(t *testing.T) keystore.Store {
				return newStore(t, pool, pgstore.Config{ClientKeys: 8})
			})
		})
	}
}

// claimRace runs n concurrent claims of key: exactly one acquires (taking
// the key over if wantTookOver), the others see it in flight, none fails.
func claimRace(t *testing.T, s keystore.Store, n int, key string, wantTookOver bool) {
	t.Helper()
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		mu       sync.Mutex
		acquired []keystore.Claim
		inFlight int
	)
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := s.Claim(testCtx(t), key, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{byte(i)}, Lease: time.Minute, Token: keystore.NewToken()})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("claim %d: %v", i, err)
			case c.Acquired:
				acquired = append(acquired, c)
			case c.State == keystore.InFlight && c.LeaseRemaining > 0:
				inFlight++
			default:
				t.Errorf("claim %d: %+v", i, c)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(acquired) != 1 || inFlight != n-1 {
		t.Fatalf("%d acquired, %d in flight; want 1 and %d", len(acquired), inFlight, n-1)
	}
	if acquired[0].TookOver != wantTookOver {
		t.Errorf("TookOver = %v, want %v", acquired[0].TookOver, wantTookOver)
	}
}

// Replicas starting at once migrate under the stricter defaults too: each
// must see what the replica before it committed while it waited for the
// migration lock.
func TestMigrateConcurrentlyUnderStricterIsolation(t *testing.T) {
	for _, level := range isolationLevels {
		t.Run(level, func(t *testing.T) {
			pool := isolationPool(t, level)
			schema := newSchema(t, pool)
			const n = 4
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					s, err := pgstore.New(testCtx(t), pool, pgstore.Config{Schema: schema, PruneInterval: -1})
					if err != nil {
						t.Errorf("replica %d: New: %v", i, err)
						return
					}
					s.Close()
				})
			}
			close(start)
			wg.Wait()
		})
	}
}
