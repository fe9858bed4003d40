package testkit_test

import (
	"context"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Rows committed on the primary are on the standby; once the primary is
// stopped and the standby promoted, a pool over URL writes to the promoted
// standby and reads every row it had.
func TestPromote(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    testkit.StandbyOptions
	}{
		{"async", testkit.StandbyOptions{}},
		{"sync", testkit.StandbyOptions{Sync: true, SynchronousCommit: "remote_apply"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p, err := testkit.StartStandby(ctx, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			pool, err := pgxpool.New(ctx, p.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if _, err := pool.Exec(ctx, "CREATE TABLE t (n int PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			const rows = 50
			for i := range rows {
				if _, err := pool.Exec(ctx, "INSERT INTO t VALUES ($1)", i); err != nil {
					t.Fatal(err)
				}
			}
			standby, err := pgx.Connect(ctx, p.StandbyURL())
			if err != nil {
				t.Fatal(err)
			}
			defer standby.Close(ctx)
			var n int
			if tc.o.Sync { // remote_apply: visible on the standby once committed
				if err := standby.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != rows {
					t.Fatalf("standby has %d rows, %v; want %d at once under remote_apply", n, err, rows)
				}
			}
			for i := 0; n != rows; i++ {
				if err := standby.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
					t.Fatal(err)
				}
				if i == 600 {
					t.Fatalf("standby has %d of %d rows after 30 s", n, rows)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if _, err := standby.Exec(ctx, "INSERT INTO t VALUES (-1)"); err == nil {
				t.Fatal("the standby accepted a write before its promotion")
			}
			if err := p.Failover(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, "INSERT INTO t VALUES ($1)", rows); err != nil {
				if _, err := pool.Exec(ctx, "INSERT INTO t VALUES ($1)", rows); err != nil { // the first may meet a dead connection
					t.Fatalf("write after the promotion: %v", err)
				}
			}
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != rows+1 {
				t.Errorf("after the promotion: %d rows, %v; want %d", n, err, rows+1)
			}
		})
	}
}
