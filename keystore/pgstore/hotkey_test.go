package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// gateTracer holds the first statement whose SQL is sql until open is
// closed, and counts every statement with that SQL or batchSQL.
type gateTracer struct {
	sql, batchSQL string
	held          chan struct{} // closed once the first is held
	open          chan struct{}
	once          sync.Once

	mu    sync.Mutex
	count int
}

func (g *gateTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if d.SQL != g.sql && d.SQL != g.batchSQL {
		return ctx
	}
	g.mu.Lock()
	g.count++
	g.mu.Unlock()
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.held)
		<-g.open
	}
	return ctx
}

func (g *gateTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Claims of a key whose claim statement is in flight wait for it and then
// go together in one statement, though the pool has room for statements
// of their own: 32 replays of one completed key, arriving while the first
// one's statement is held, cost two statements, not 32, and each gets the
// record (a hot key's retries and duplicates cost the database one read
// each round trip, not one each).
func TestHotKeyClaimsShareAStatement(t *testing.T) {
	g := &gateTracer{held: make(chan struct{}), open: make(chan struct{})}
	pool := newPool(t, 16, g)
	s := newStore(t, pool, pgstore.Config{})
	kinds := pgstore.StatementKinds(s)
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	if err := s.Complete(ctx, key, c.Token, jsonBytes(key), time.Hour); err != nil {
		t.Fatal(err)
	}
	for sql, kind := range kinds {
		switch kind {
		case "claim":
			g.sql = sql
		case "claim (batch)":
			g.batchSQL = sql
		}
	}
	g.mu.Lock()
	g.count = 0
	g.mu.Unlock()

	const n = 32
	errs := make(chan error, n+1)
	check := func() {
		c, err := s.Claim(ctx, key, args(time.Minute))
		switch {
		case err != nil:
			errs <- err
		case c.State != keystore.Completed || string(testkit.Decoded(c.Record).Body) != key:
			errs <- fmt.Errorf("claim of the completed key: %+v", c)
		default:
			errs <- nil
		}
	}
	go check()
	select {
	case <-g.held:
	case <-time.After(15 * time.Second):
		t.Fatal("the first claim's statement never started")
	}
	for range n {
		go check()
	}
	deadline := time.Now().Add(15 * time.Second)
	for pgstore.ClaimsWaiting(s) < n {
		if time.Now().After(deadline) {
			close(g.open)
			t.Fatalf("%d of %d claims of the key wait for its statement in flight after 15 s; want all", pgstore.ClaimsWaiting(s), n)
		}
		time.Sleep(time.Millisecond)
	}
	close(g.open)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.count != 2 {
		t.Errorf("%d claims of one completed key ran %d claim statements; want 2 (the first, then one for the rest)", n+1, g.count)
	}
}
