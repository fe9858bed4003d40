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

// gateTracer holds the first hold statements whose SQL is sql or batchSQL
// until open is closed, and counts every statement with that SQL.
type gateTracer struct {
	sql, batchSQL string
	hold          int
	held          chan struct{} // closed once hold statements are held
	open          chan struct{}

	mu    sync.Mutex
	count int
}

func (g *gateTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if d.SQL != g.sql && d.SQL != g.batchSQL {
		return ctx
	}
	g.mu.Lock()
	g.count++
	n := g.count
	g.mu.Unlock()
	if n <= g.hold {
		if n == g.hold {
			close(g.held)
		}
		<-g.open
	}
	return ctx
}

func (g *gateTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// hotKeySetup returns a store on a pool of 16 connections (8 claim
// statements in flight) whose claim statements g sees, and a key of it
// completed with its own name as the body.
func hotKeySetup(t *testing.T, g *gateTracer) (*pgstore.Store, string) {
	t.Helper()
	pool := newPool(t, 16, g)
	s := newStore(t, pool, pgstore.Config{})
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	if err := s.Complete(testCtx(t), key, c.Token, jsonBytes(key), time.Hour); err != nil {
		t.Fatal(err)
	}
	for sql, kind := range pgstore.StatementKinds(s) {
		switch kind {
		case "claim":
			g.sql = sql
		case "claim (batch)":
			g.batchSQL = sql
		}
	}
	return s, key
}

// replayer returns a func that claims key and sends nil on errs if the
// claim found the completed record, else an error.
func replayer(ctx context.Context, s *pgstore.Store, key string, errs chan<- error) func() {
	return func() {
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
}

// Claims of a key of which HotKeyClaims claims are in flight, each in a
// statement of its own, wait for them and then go together in one
// statement, though the pool has room for statements of their own: 32 replays of one completed key,
// arriving while those are held, cost one statement more, not 32, and
// each gets the record (a hot key's retries and duplicates cost the
// database one read a round trip, not one each).
func TestHotKeyClaimsShareAStatement(t *testing.T) {
	k := pgstore.HotKeyClaims
	g := &gateTracer{hold: k, held: make(chan struct{}), open: make(chan struct{})}
	s, key := hotKeySetup(t, g)
	ctx := testCtx(t)
	const n = 32
	errs := make(chan error, n+k)
	for range k {
		go replayer(ctx, s, key, errs)()
	}
	select {
	case <-g.held:
	case <-time.After(15 * time.Second):
		t.Fatalf("the first %d claims' statements never all started", k)
	}
	for range n {
		go replayer(ctx, s, key, errs)()
	}
	deadline := time.Now().Add(15 * time.Second)
	for pgstore.ClaimsWaiting(s) < n {
		if time.Now().After(deadline) {
			close(g.open)
			t.Fatalf("%d of %d claims of the key wait for its statements in flight after 15 s; want all", pgstore.ClaimsWaiting(s), n)
		}
		time.Sleep(time.Millisecond)
	}
	close(g.open)
	for range n + k {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.count != k+1 {
		t.Errorf("%d claims of one completed key ran %d claim statements; want %d (the first %d, then one for the rest)", n+k, g.count, k+1, k)
	}
}

// A few concurrent claims of one key, a sender's duplicates or a few
// receivers' retries, each run a statement of their own at once, as
// before hot keys shared statements: three replays of a completed key
// arriving while a fourth one's statement is held are answered while it
// is. Made to wait for it, two to four concurrent replays of one key took
// two to three times as long each.
func TestFewClaimsOfAKeyDoNotWait(t *testing.T) {
	g := &gateTracer{hold: 1, held: make(chan struct{}), open: make(chan struct{})}
	s, key := hotKeySetup(t, g)
	ctx := testCtx(t)
	errs := make(chan error, 4)
	go replayer(ctx, s, key, errs)()
	select {
	case <-g.held:
	case <-time.After(15 * time.Second):
		t.Fatal("the first claim's statement never started")
	}
	defer close(g.open)
	for range 3 {
		go replayer(ctx, s, key, errs)()
	}
	for range 3 {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("a claim of the key still waits after 15 s while another's statement is held (%d waiting)", pgstore.ClaimsWaiting(s))
		}
	}
}
