package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// The store fill (a few addresses sending new keys until the store is
// full) on PostgreSQL, which had no bound at all
// (524 B a request): 8 source addresses each send new keys past their
// bound; each is held to ClientKeys, refused past it with a client
// FullError (inserting no row), and a ninth address still claims.
func TestClientKeysBoundEachAddress(t *testing.T) {
	pool := newPool(t, 8, nil)
	s := newStore(t, pool, pgstore.Config{ClientKeys: 50, ClientWindow: time.Hour})
	ctx := context.Background()
	refused := keystoretest.FillClients(t, s, 8, 30)
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()).Scan(&rows); err != nil || rows != 8*50+1 {
		t.Fatalf("the key table holds %d rows (%v), want the 401 keys acquired: the %d refusals inserted nothing", rows, err, len(refused))
	}
}

// Claims of bounded clients that run at once, batched
// (batchClaimCountedSQL): each client acquires at least its bound (none
// is refused early), and past it at most its claims at once less one
// (the slack of the count's shards, see Config.ClientKeys); every other
// claim is refused with a client FullError, and the count kept equals
// the keys inserted. A fifth client sends each of its keys twice at
// once: two first claims of one key may both count while one acquires
// (the count errs on the strict side), so it acquires at most its count.
func TestClientKeysBoundConcurrent(t *testing.T) {
	t.Run("read_committed", func(t *testing.T) {
		tr := &counter{}
		testClientKeysBoundConcurrent(t, newPool(t, 4, tr), tr) // two claim statements at once: the rest batch
	})
	for _, level := range isolationLevels {
		t.Run(level, func(t *testing.T) {
			tr := &counter{}
			pool := openPool(t, 4, func(cfg *pgxpool.Config) {
				cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
				cfg.ConnConfig.Tracer = tr
			})
			testClientKeysBoundConcurrent(t, pool, tr)
		})
	}
}

func testClientKeysBoundConcurrent(t *testing.T, pool *pgxpool.Pool, tr *counter) {
	s := newStore(t, pool, pgstore.Config{ClientKeys: 25, ClientWindow: time.Hour})
	tr.take()
	ctx := context.Background()
	prefix := keystoretest.Key(t)[:16]
	const clients, perClient = 5, 40
	var mu sync.Mutex
	acquired := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient*2)
	for c := range clients {
		client := "client-" + strconv.Itoa(c)
		for i := range perClient {
			key := prefix + client + "-" + strconv.Itoa(i)
			sends := 1
			if c == clients-1 {
				sends = 2 // each key twice, at once
			}
			for range sends {
				wg.Go(func() {
					r, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: keystore.NewToken(), Client: client})
					var fe *keystore.FullError
					switch {
					case err == nil && r.Acquired:
						mu.Lock()
						acquired[client]++
						mu.Unlock()
					case err == nil && r.State == keystore.InFlight:
					case errors.As(err, &fe) && fe.Client && fe.RetryAfter > 0 && fe.RetryAfter <= time.Hour:
					default:
						errs <- fmt.Errorf("%s %s: %v %v", client, key, r.State, err)
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	batches := 0
	for _, sql := range tr.take() {
		if strings.Contains(sql, "unnest(") && strings.Contains(sql, "_client_shards") {
			batches++
		}
	}
	if batches == 0 {
		t.Errorf("no batch statement ran: the test did not reach batchClaimCountedSQL")
	}
	t.Logf("%d batch statements", batches)
	for err := range errs {
		t.Error(err)
	}
	for c := range clients {
		client := "client-" + strconv.Itoa(c)
		var n int
		if err := pool.QueryRow(ctx, clientCountSQL(s), client).Scan(&n); err != nil {
			t.Fatal(err)
		}
		got := acquired[client]
		t.Logf("%s acquired %d keys of %d, bound 25; count %d", client, got, perClient, n)
		switch slack := 2*perClient - 1; {
		case c == clients-1 && (got > n || n > 25+slack || got == 0):
			t.Errorf("%s, each key sent twice at once, acquired %d, counted %d; want some keys, at most the count, and at most %d", client, got, n, 25+slack)
		case c < clients-1 && (got != n || got < 25 || got > 25+perClient-1):
			t.Errorf("%s acquired %d, counted %d; want them equal, from 25 to %d", client, got, n, 25+perClient-1)
		}
	}
}

// A bounded claim is one statement, as an unbounded one: a first call
// two (claim, complete), a replay one, a refusal one.
func TestClientBoundStatements(t *testing.T) {
	tr := &counter{}
	pool := newPool(t, 4, tr)
	s := newStore(t, pool, pgstore.Config{ClientKeys: 1, ClientWindow: time.Hour})
	ctx := testCtx(t)
	a := args(time.Minute)
	a.Client = "c"
	key := keystoretest.Key(t)
	tr.take()
	if c, err := s.Claim(ctx, key, a); err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	if err := s.Complete(ctx, key, a.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := tr.take(); len(got) != 2 {
		t.Errorf("a bounded first call ran %d statements, want 2 (claim, complete): %q", len(got), got)
	}
	a.Token = keystore.NewToken()
	if c, err := s.Claim(ctx, key, a); err != nil || c.State != keystore.Completed {
		t.Fatalf("replay under the full bound: %v %v", c.State, err)
	}
	if got := tr.take(); len(got) != 1 {
		t.Errorf("a bounded replay ran %d statements, want 1: %q", len(got), got)
	}
	var n int
	if err := pool.QueryRow(ctx, clientCountSQL(s), "c").Scan(&n); err != nil || n != 1 {
		t.Errorf("after a replay the client's count is %d (%v), want 1", n, err)
	}
	tr.take()
	a.Token = keystore.NewToken()
	var fe *keystore.FullError
	if _, err := s.Claim(ctx, keystoretest.Key(t), a); !errors.As(err, &fe) || !fe.Client {
		t.Fatalf("a new key past a bound of 1: %v", err)
	}
	if got := tr.take(); len(got) != 1 {
		t.Errorf("a refused claim ran %d statements, want 1: %q", len(got), got)
	}
}

// A client's first claims that run at once do not wait for each other:
// one held up (its key's insert waits for a transaction that inserted the
// same key) leaves the client's next new key to go through, counted.
func TestClientCountNotSerialised(t *testing.T) {
	pool := newPool(t, 8, nil)
	schema := newSchema(t, pool)
	s := newStore(t, pool, pgstore.Config{Schema: schema, ClientKeys: 100, ClientWindow: time.Hour})
	ctx := testCtx(t)
	a := args(time.Minute)
	a.Client = "c"
	if c, err := s.Claim(ctx, keystoretest.Key(t), a); err != nil || !c.Acquired {
		t.Fatalf("first claim: %v %v", c.State, err)
	}
	held := keystoretest.Key(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var txPid uint32
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&txPid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+s.Table()+" (key, fingerprint, token, expires_at) VALUES ($1, '\\x00', 1, now() + interval '1 hour')", held); err != nil {
		t.Fatal(err)
	}
	type result struct {
		c   keystore.Claim
		err error
	}
	first := make(chan result, 1)
	go func() {
		a := args(time.Minute)
		a.Client = "c"
		c, err := s.Claim(ctx, held, a)
		first <- result{c, err}
	}()
	waitBlockedBy(t, pool, txPid, first) // the claim counted, and waits on its key
	second := make(chan result, 1)
	go func() {
		a := args(time.Minute)
		a.Client = "c"
		c, err := s.Claim(ctx, keystoretest.Key(t), a)
		second <- result{c, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case r := <-second:
			if r.err != nil || !r.c.Acquired {
				t.Fatalf("the client's second new key: %v %v", r.c.State, r.err)
			}
			goto released
		default:
		}
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE cardinality(pg_blocking_pids(pid)) > 0 AND NOT $1::integer = ANY (pg_blocking_pids(pid)) AND strpos(query, $2) > 0`,
			txPid, schema).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			t.Fatal("the client's second new key waits for its first, held up on another key")
		}
		if time.Now().After(deadline) {
			t.Fatal("the client's second new key neither went through nor waited on a lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
released:
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.err != nil || !r.c.Acquired {
		t.Fatalf("the held-up claim, once the transaction rolled back: %v %v", r.c.State, r.err)
	}
}

// clientCountSQL reads a client's count ($1) as s keeps it: the sum of
// its rows whose windows run.
func clientCountSQL(s *pgstore.Store) string {
	return "SELECT coalesce(sum(n), 0) FROM " + strings.TrimSuffix(s.Table(), `"`) + `_client_shards" WHERE client = $1 AND window_end > clock_timestamp()`
}
