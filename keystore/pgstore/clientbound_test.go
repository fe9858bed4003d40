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

	"github.com/geoidem/geoidem/internal/storecall"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// The store fill of issue 35 on PostgreSQL, which had no bound at all
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
// (batchClaimCountedSQL): each client acquires exactly its bound, every
// other claim is refused with a client FullError, and the count kept
// equals the keys inserted. A fifth client sends each of its keys twice at
// once: two first claims of one key may both count while one acquires
// (the count errs on the strict side), so it acquires at most its bound.
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
		if strings.Contains(sql, "unnest(") && strings.Contains(sql, "_clients") {
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
		if err := pool.QueryRow(ctx, "SELECT n FROM "+strings.TrimSuffix(s.Table(), `"`)+`_clients" WHERE client = $1`, client).Scan(&n); err != nil {
			t.Fatal(err)
		}
		got := acquired[client]
		t.Logf("%s acquired %d keys of %d, bound 25; count %d", client, got, perClient, n)
		switch {
		case c == clients-1 && (got > 25 || n > 25 || got == 0):
			t.Errorf("%s, each key sent twice at once, acquired %d, counted %d; want at most 25 of each, and some keys", client, got, n)
		case c < clients-1 && (got != 25 || n != 25):
			t.Errorf("%s acquired %d, counted %d; want 25 and 25", client, got, n)
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
	if err := storecall.Complete(ctx, s, key, a.Token, record("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := tr.take(); len(got) != 2 {
		t.Errorf("a bounded first call ran %d statements, want 2 (claim, complete): %q", len(got), got)
	}
	a.Token = keystore.NewToken()
	if c, err := s.Claim(ctx, key, a); err != nil || c.State != keystore.Completed {
		t.Fatalf("replay: %v %v", c.State, err)
	}
	if got := tr.take(); len(got) != 1 {
		t.Errorf("a bounded replay ran %d statements, want 1: %q", len(got), got)
	}
	a.Token = keystore.NewToken()
	var fe *keystore.FullError
	if _, err := s.Claim(ctx, keystoretest.Key(t), a); !errors.As(err, &fe) || !fe.Client {
		t.Fatalf("a new key past a bound of 1: %v", err)
	}
	if got := tr.take(); len(got) != 1 {
		t.Errorf("a refused claim ran %d statements, want 1: %q", len(got), got)
	}
}
