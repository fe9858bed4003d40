package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
)

// The middleware renews a request's lease while its handler runs. When the
// handler completes the key in its own transaction (InTx, CompleteTx), the
// renewal's UPDATE can wait on that transaction's row lock and then meet the
// committed record: it must succeed, not report the lease lost (which made
// the middleware cancel the handler with ErrLeaseLost after a successful
// commit). A renewal that meets a rollback extends the lease as usual. Both
// hold whatever the sessions' default isolation (the renewal's UPDATE then
// fails with a serialization failure first, and the store retries it).
func TestExtendMeetsOwnCompleteTx(t *testing.T) {
	for _, level := range append([]string{"read committed"}, isolationLevels...) {
		for _, commit := range []bool{true, false} {
			name := map[bool]string{true: "Commit", false: "Rollback"}[commit]
			t.Run(level+"/"+name, func(t *testing.T) {
				testExtendMeetsOwnCompleteTx(t, isolationPool(t, level), commit, name)
			})
		}
	}
}

func testExtendMeetsOwnCompleteTx(t *testing.T, pool *pgxpool.Pool, commit bool, name string) {
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)

	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := s.CompleteTx(ctx, tx, &keystore.Hold{Key: key, Token: c.Token, Retention: time.Hour}, jsonRecord(`"x"`)); err != nil {
		t.Fatalf("CompleteTx: %v", err)
	}
	pid := tx.Conn().PgConn().PID()
	extended := make(chan error, 1)
	go func() { _, err := s.Extend(ctx, key, c.Token, time.Minute); extended <- err }()
	waitBlockedBy(t, pool, pid, extended)
	if commit {
		err = tx.Commit(ctx)
	} else {
		err = tx.Rollback(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := <-extended; err != nil {
		t.Fatalf("Extend that waited for its own CompleteTx's %s: %v, want nil", name, err)
	}
	if commit {
		got := claim(t, s, key, time.Minute, keystore.Completed)
		if string(testkit.Decoded(got.Record).Body) != `"x"` {
			t.Errorf("record = %s, want the committed one", testkit.Decoded(got.Record).Body)
		}
	} else {
		in := claim(t, s, key, time.Minute, keystore.InFlight)
		if in.LeaseRemaining < 30*time.Second {
			t.Errorf("after the rollback the lease has %v left; the Extend did not take effect", in.LeaseRemaining)
		}
	}
}

// The same through the middleware, with a commit that takes several
// renewals: a handler records its answer with InTx, and the commit of its
// transaction waits (a deferred constraint trigger on the table it writes,
// which waits for a lock the test holds) while the middleware renews the
// lease every Lease/3. Each renewal waits on the key's row lock, which the
// committing transaction holds since CompleteTx, and times out
// (StoreTimeout); the test lets the commit finish only after several have,
// long after a whole Lease without a successful renewal. The handler must
// not be stopped (its context canceled with keystore.ErrLeaseLost) while
// or after its commit succeeds: the commit holds the key, and InTx commits
// through keystore.Hold.Commit, which tells the renewal so. The request is
// answered, its record committed, and the retry is replayed.
func TestRenewalWaitsOnOwnCommitBehindMiddleware(t *testing.T) {
	admin := newPool(t, 4, nil)
	pool := newPool(t, 8, nil)
	schema := newSchema(t, admin)
	s := newStore(t, pool, pgstore.Config{Schema: schema})
	ctx := testCtx(t)

	// The handler's table, whose deferred trigger makes every commit that
	// wrote to it wait for an advisory lock held by the test.
	var lockKey int64
	if err := admin.QueryRow(ctx, "SELECT (random() * 1e15)::bigint").Scan(&lockKey); err != nil {
		t.Fatal(err)
	}
	slow := pgx.Identifier{schema, "slow"}.Sanitize()
	wait := pgx.Identifier{schema, "wait_at_commit"}.Sanitize()
	for _, q := range []string{
		`CREATE TABLE ` + slow + ` (id text PRIMARY KEY)`,
		`CREATE FUNCTION ` + wait + `() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock(` + strconv.FormatInt(lockKey, 10) + `); RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER wait_at_commit AFTER INSERT ON ` + slow + `
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ` + wait + `()`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := admin.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		t.Fatal(err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			if _, err := holder.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey); err != nil {
				t.Error(err)
			}
		}
	}
	defer unlock()

	var (
		runs, failedExtends atomic.Int32
		committing          atomic.Bool
		leaseCanceled       atomic.Bool  // the handler's context ended with ErrLeaseLost
		stoppedWhile        atomic.Value // string: when the handler found its context canceled for a lost lease
	)
	stopped := func(r *http.Request, when string) {
		if errors.Is(context.Cause(r.Context()), keystore.ErrLeaseLost) {
			stoppedWhile.CompareAndSwap(nil, when)
		}
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		context.AfterFunc(r.Context(), func() {
			if errors.Is(context.Cause(r.Context()), keystore.ErrLeaseLost) {
				leaseCanceled.Store(true)
			}
		})
		hold, _ := middleware.HoldFromContext(r.Context())
		rec, err := s.InTx(r.Context(), hold, func(tx pgx.Tx) (pgstore.Record, error) {
			if _, err := tx.Exec(r.Context(), "INSERT INTO "+slow+" (id) VALUES ('x')"); err != nil {
				return pgstore.Record{}, err
			}
			committing.Store(true) // CompleteTx and the commit come next
			return pgstore.Record{StatusCode: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"stored":"x"}`)}, nil
		})
		stopped(r, "when InTx returned (the commit had succeeded)")
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", rec.Header.Get("Content-Type"))
		w.WriteHeader(rec.StatusCode)
		_, _ = w.Write(rec.Body)
		stopped(r, "after it answered")
	})
	m, err := middleware.New(s, middleware.Config{
		Lease:        300 * time.Millisecond,
		StoreTimeout: 90 * time.Millisecond,
		StoreObserver: func(c middleware.StoreCall) {
			if c.Op == middleware.OpExtend && c.Err != nil && committing.Load() {
				failedExtends.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(handler)
	post := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{"type":"Feature"}`))
		r.Header.Set("Idempotency-Key", `"slow-commit"`)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- post() }()
	// The commit waits for the test's lock; renewals time out on the key's
	// row lock meanwhile, four of them (more than a Lease's worth), unless
	// the middleware stops the handler first.
	waitBlockedBy(t, admin, holder.Conn().PgConn().PID(), first)
	waitFor(t, "four renewals timed out during the commit", func() bool { return failedExtends.Load() >= 4 || leaseCanceled.Load() })
	if leaseCanceled.Load() {
		t.Errorf("the handler's context was canceled with ErrLeaseLost while its own commit held the key (after %d renewals timed out)", failedExtends.Load())
	}
	unlock()

	w := <-first
	if w.Code != http.StatusCreated || w.Body.String() != `{"stored":"x"}` {
		t.Fatalf("the request with the slow commit answered %d %q, want 201", w.Code, w.Body)
	}
	if when, ok := stoppedWhile.Load().(string); ok {
		t.Errorf("the handler's context was canceled with ErrLeaseLost %s, while its own commit held the key", when)
	}
	var rows int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+slow).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("the handler's table has %d rows (%v), want 1", rows, err)
	}
	replay := post()
	if replay.Code != http.StatusCreated || replay.Body.String() != `{"stored":"x"}` || replay.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %d %q (replayed %q), want the recorded answer replayed", replay.Code, replay.Body, replay.Header().Get("Idempotent-Replayed"))
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
	t.Logf("%d renewals failed while the commit ran", failedExtends.Load())
}
