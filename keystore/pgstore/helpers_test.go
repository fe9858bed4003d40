package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// connString is the test database: GEOIDEM_TEST_POSTGRES, or the loopback
// server with trust authentication that these machines run.
func connString() string {
	return testkit.SharedPostgresURL()
}

// newPool connects to the test database, failing (never skipping) the test
// when it cannot. tracer may be nil.
func newPool(t testing.TB, maxConns int32, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	return openPool(t, maxConns, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tracer })
}

// openPool opens a pool of at most maxConns connections to the test
// database, its configuration adjusted by configure before it connects.
func openPool(t testing.TB, maxConns int32, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(connString())
	if err != nil {
		t.Fatalf("parse %s: %v", connString(), err)
	}
	cfg.MaxConns = maxConns
	configure(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v (the tests need a running server; set GEOIDEM_TEST_POSTGRES)", connString(), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		t.Fatalf("PostgreSQL at %s is unreachable: %v (the tests need a running server; set GEOIDEM_TEST_POSTGRES)", connString(), err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newSchema creates a schema with a random name, dropped with everything in
// it when the test ends.
func newSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "pgstore_test_" + hex.EncodeToString(b[:])
	if _, err := pool.Exec(context.Background(), "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// newStore returns a Store in a schema of its own on pool, without a
// janitor. cfg.Schema and cfg.PruneInterval are filled in when zero.
func newStore(t testing.TB, pool *pgxpool.Pool, cfg pgstore.Config) *pgstore.Store {
	t.Helper()
	if cfg.Schema == "" {
		cfg.Schema = newSchema(t, pool)
	}
	if cfg.PruneInterval == 0 {
		cfg.PruneInterval = -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := pgstore.New(ctx, pool, cfg)
	if err != nil {
		t.Fatalf("pgstore.New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// testCtx is a context for one test's database calls.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// counter is a pgx.QueryTracer that records the statements run.
type counter struct {
	mu  sync.Mutex
	sql []string
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sql = append(c.sql, strings.Join(strings.Fields(d.SQL), " "))
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements recorded since the last take, and forgets them.
func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sql
	c.sql = nil
	return s
}

var fp = keystore.Fingerprint{'p', 'g'}

// acquire, as claim's want, says that the Claim must acquire the key.
const acquire keystore.State = -1

// args returns the ClaimArgs of a Claim with fp, lease and a fresh token.
func args(lease time.Duration) keystore.ClaimArgs {
	return keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: keystore.NewToken()}
}

// claim claims key with a fresh token and fails t unless the Claim
// acquires it (want acquire) or finds it in the state want.
func claim(t testing.TB, s keystore.Store, key string, lease time.Duration, want keystore.State) testkit.Claimed {
	t.Helper()
	a := args(lease)
	c, err := s.Claim(testCtx(t), key, a)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	switch {
	case want == acquire && !c.Acquired:
		t.Fatalf("Claim state = %v, want it acquired", c.State)
	case want != acquire && c.Acquired:
		t.Fatalf("Claim acquired the key, want %v", want)
	case c.State != want && want != acquire:
		t.Fatalf("Claim state = %v, want %v", c.State, want)
	case c.Acquired && c.State != keystore.InFlight:
		t.Fatalf("acquired Claim reports state %v, want in flight", c.State)
	}
	r := testkit.Claimed{Claim: c}
	if c.Acquired {
		r.Token = a.Token
	}
	return r
}

// expireLease ends key's lease or retention now, by the database clock,
// as if the time had passed.
func expireLease(t testing.TB, pool *pgxpool.Pool, s *pgstore.Store, key string) {
	t.Helper()
	tag, err := pool.Exec(testCtx(t), "UPDATE "+s.Table()+" SET expires_at = clock_timestamp() - interval '1 millisecond' WHERE key = $1", key)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("expire %.8s…: %v (%d rows)", key, err, tag.RowsAffected())
	}
}

// postgisOnce serialises CREATE EXTENSION across this process's tests; other
// processes creating it at the same moment are handled by the retry.
var postgisOnce sync.Mutex

// ensurePostGIS creates the postgis extension in the test database if it is
// missing. On Debian it comes from the postgresql-15-postgis-3 package.
func ensurePostGIS(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	postgisOnce.Lock()
	defer postgisOnce.Unlock()
	var err error
	for range 3 {
		if _, err = pool.Exec(testCtx(t), "CREATE EXTENSION IF NOT EXISTS postgis"); err == nil {
			return
		}
	}
	t.Fatalf("CREATE EXTENSION postgis: %v (install it: apt-get install -y postgresql-15-postgis-3)", err)
}

// newFeatures creates a PostGIS feature table in schema, keyed by feature id,
// with a count of the writes each row received. It returns its quoted name.
func newFeatures(t testing.TB, pool *pgxpool.Pool, schema string) string {
	t.Helper()
	ensurePostGIS(t, pool)
	table := pgx.Identifier{schema, "features"}.Sanitize()
	_, err := pool.Exec(testCtx(t), `CREATE TABLE `+table+` (
		id     text PRIMARY KEY,
		geom   public.geometry(Geometry, 4326) NOT NULL,
		props  text NOT NULL,
		writes integer NOT NULL)`)
	if err != nil {
		t.Fatalf("create features: %v", err)
	}
	return table
}

// upsertFeature writes one point feature in tx, the way an ingest handler
// does.
func upsertFeature(ctx context.Context, tx pgx.Tx, table, id, props string) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+table+` AS f (id, geom, props, writes)
		VALUES ($1, public.ST_SetSRID(public.ST_GeomFromGeoJSON($2), 4326), $3, 1)
		ON CONFLICT (id) DO UPDATE SET geom = excluded.geom, props = excluded.props, writes = f.writes + 1`,
		id, `{"type":"Point","coordinates":[13.4,52.5]}`, props)
	return err
}

// feature returns the props of feature id and the writes it received, or
// ("", 0) if it does not exist.
func feature(t testing.TB, pool *pgxpool.Pool, table, id string) (string, int) {
	t.Helper()
	var (
		props  string
		writes int
		srid   int
	)
	err := pool.QueryRow(testCtx(t), `SELECT props, writes, public.ST_SRID(geom) FROM `+table+` WHERE id = $1`, id).Scan(&props, &writes, &srid)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0
	}
	if err != nil {
		t.Fatalf("read feature %s: %v", id, err)
	}
	if srid != 4326 {
		t.Errorf("feature %s has SRID %d, want 4326", id, srid)
	}
	return props, writes
}

// holdCtx returns the test's context and a hold on c's key, as the
// middleware hands them to a handler.
func holdCtx(t testing.TB, key string, c testkit.Claimed) (context.Context, *keystore.Hold) {
	h := &keystore.Hold{Key: key, Token: c.Token, Retention: time.Hour}
	return testCtx(t), h
}

func jsonRecord(body string) pgstore.Record {
	return pgstore.Record{StatusCode: 201, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

// jsonBytes is jsonRecord(body) encoded, what Store.Complete takes.
func jsonBytes(body string) []byte { return record.Append(nil, record.Record(jsonRecord(body))) }

// waitBlockedBy waits until some session waits for a lock held by the
// backend pid, failing the test if done delivers first (the operation did
// not wait) or nothing waits within ten seconds.
func waitBlockedBy[T any](t testing.TB, pool *pgxpool.Pool, pid uint32, done <-chan T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(testCtx(t), "SELECT count(*) FROM pg_stat_activity WHERE $1::integer = ANY (pg_blocking_pids(pid))", pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("the operation did not wait for the transaction's row lock: %v", r)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing waited for the transaction's row lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
