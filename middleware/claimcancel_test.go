package middleware_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
)

// newPGStore returns a pgstore.Store in a schema of its own on the loopback
// PostgreSQL, failing (never skipping) the test when it is unreachable.
func newPGStore(t *testing.T) *pgstore.Store {
	t.Helper()
	s, _ := newPGStoreApp(t, "", nil)
	return s
}

// newPGStoreApp is newPGStore on a pool whose connections carry
// application_name app (when not empty) and, when via is not nil, go to
// the address via returns (a proxy in front of the server); it returns the
// pool too.
func newPGStoreApp(t *testing.T, app string, via func(hostport string) string) (*pgstore.Store, *pgxpool.Pool) {
	t.Helper()
	conn := os.Getenv("GEOIDEM_TEST_POSTGRES")
	if conn == "" {
		conn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		t.Fatalf("parse %s: %v", conn, err)
	}
	if app != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	if via != nil {
		host, port, err := net.SplitHostPort(via(net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
		cfg.ConnConfig.Fallbacks = nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", conn, err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("PostgreSQL at %s is unreachable: %v", conn, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "middleware_test_" + hex.EncodeToString(b[:])
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	s, err := pgstore.New(ctx, pool, pgstore.Config{Schema: schema, PruneInterval: -1})
	if err != nil {
		t.Fatalf("pgstore.New: %v", err)
	}
	t.Cleanup(s.Close)
	return s, pool
}

// lateReplyStore lets Claim commit in PostgreSQL, then holds its reply:
// it reports on claimed and answers when reply is closed, unless the
// caller's context is done by then (the reply is lost, as when pgx gives
// up on a canceled query whose statement had already committed).
type lateReplyStore struct {
	*pgstore.Store
	claimed chan struct{}
	reply   chan struct{}
}

func (s *lateReplyStore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	c, err := s.Store.Claim(context.WithoutCancel(ctx), key, a)
	if err != nil {
		return c, err
	}
	select {
	case s.claimed <- struct{}{}:
	default:
	}
	select {
	case <-s.reply:
	case <-ctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return keystore.Claim{}, err
	}
	return c, nil
}

// A sender killed while its claim is in flight: the claim commits in
// PostgreSQL but the request's context is canceled before the reply. The
// middleware must not leave the key in flight for the whole lease (409 to
// every retry for 30 s): it runs the claim under a context the client
// cannot cancel, and, finding the client gone, releases the key at once
// without running the handler. The next retry runs the handler.
func TestClientGoneMidClaimDoesNotBlockKey(t *testing.T) {
	store := &lateReplyStore{Store: newPGStore(t), claimed: make(chan struct{}, 1), reply: make(chan struct{})}
	var runs atomic.Int64
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(h, post("k1", feature).WithContext(ctx))
	}()
	<-store.claimed
	cancel() // the sender is gone while the committed claim's reply is on its way
	close(store.reply)
	<-done
	if n := runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for a request whose client was gone before its claim returned, want 0", n)
	}

	if got := ev.outcomes(); len(got) != 1 || got[0] != middleware.Canceled {
		t.Errorf("outcomes %v, want [canceled]", got)
	}

	w := serve(h, post("k1", feature))
	if w.Code != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("retry: %d %s (handler runs %d), want 201 from one run: the abandoned claim must not block the key for its lease",
			w.Code, w.Body, runs.Load())
	}
}

// TestClientGoneBeforeInProcessClaim: memstore, which never waits, is
// claimed under the request's own context, so a client gone before the
// claim makes the store refuse it; the middleware claims again, detached,
// and abandons the key as for any client that left: nothing runs, the key
// is free for the retry.
func TestClientGoneBeforeInProcessClaim(t *testing.T) {
	var runs atomic.Int64
	var ev events
	m := newMiddleware(t, memstore.New(memstore.Config{}), middleware.Config{Observer: ev.observe})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := serve(h, post("k1", feature).WithContext(ctx))
	if n := runs.Load(); n != 0 || w.Code != http.StatusServiceUnavailable {
		t.Fatalf("a request whose client was gone before its claim: %d %s, handler runs %d, want 503 and no run", w.Code, w.Body, n)
	}
	if got := ev.outcomes(); len(got) != 1 || got[0] != middleware.Canceled {
		t.Errorf("outcomes %v, want [canceled]", got)
	}
	if w := serve(h, post("k1", feature)); w.Code != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("retry: %d %s (handler runs %d), want 201 from one run", w.Code, w.Body, runs.Load())
	}
}
