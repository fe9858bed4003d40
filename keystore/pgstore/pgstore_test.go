package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

func TestConformance(t *testing.T) {
	pool := newPool(t, 16, nil)
	keystoretest.Run(t, func(t *testing.T) keystore.Store {
		return newStore(t, pool, pgstore.Config{})
	})
}

// The rules of keystore.ClientBounded (and all the others, which claim
// without a client or for one only a key) with a bound on each client.
func TestConformanceClientBound(t *testing.T) {
	pool := newPool(t, 16, nil)
	keystoretest.Run(t, func(t *testing.T) keystore.Store {
		return newStore(t, pool, pgstore.Config{ClientKeys: 8, ClientWindow: time.Hour})
	})
}

// The store works whatever exec mode the pool's connections default to: its
// arguments are passed as pgtype valuers only when the statements are
// described first, and claim rows that are not in the binary format (the
// simple protocol's text) are scanned by pgx.
func TestConformanceExecModes(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
		pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			pool := openPool(t, 8, func(cfg *pgxpool.Config) { cfg.ConnConfig.DefaultQueryExecMode = mode })
			keystoretest.Run(t, func(t *testing.T) keystore.Store {
				return newStore(t, pool, pgstore.Config{ClientKeys: 8})
			})
		})
	}
}

// A first call costs two statements (claim, complete), a replay one.
func TestStatementsPerCall(t *testing.T) {
	tr := &counter{}
	pool := newPool(t, 4, tr)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)

	key := keystoretest.Key(t)
	tr.take()
	c := claim(t, s, key, time.Minute, acquire)
	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := tr.take(); len(got) != 2 {
		t.Errorf("first call ran %d statements, want 2 (claim, complete): %q", len(got), got)
	}
	for range 3 {
		claim(t, s, key, time.Minute, keystore.Completed)
		if got := tr.take(); len(got) != 1 {
			t.Errorf("replay ran %d statements, want 1: %q", len(got), got)
		}
	}
}

// A first call completed in the handler's transaction costs the claim and
// one statement in the transaction, besides the handler's own BEGIN, write
// and COMMIT; its replay costs one.
func TestStatementsPerCallInTx(t *testing.T) {
	tr := &counter{}
	pool := newPool(t, 4, tr)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})

	key := keystoretest.Key(t)
	tr.take()
	c := claim(t, s, key, time.Minute, acquire)
	if got := tr.take(); len(got) != 1 {
		t.Errorf("claim ran %d statements, want 1: %q", len(got), got)
	}
	ctx, hold := holdCtx(t, key, c)
	_, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
		return jsonRecord("{}"), upsertFeature(ctx, tx, features, "f1", "one")
	})
	if err != nil {
		t.Fatal(err)
	}
	got := tr.take()
	var store []string
	for _, q := range got {
		switch {
		case strings.HasPrefix(q, "begin"), q == "commit", strings.Contains(q, "INSERT INTO "+features):
		default:
			store = append(store, q)
		}
	}
	if len(got) != 4 || len(store) != 1 || !strings.HasPrefix(store[0], "UPDATE") {
		t.Errorf("InTx ran %q; want begin, the handler's write, one UPDATE of the key, commit", got)
	}
	claim(t, s, key, time.Minute, keystore.Completed)
	if got := tr.take(); len(got) != 1 {
		t.Errorf("replay ran %d statements, want 1: %q", len(got), got)
	}
}

// Rounds of 64 concurrent claims of one key, absent, with an expired lease
// or with an expired record: exactly one acquires, every other one sees the
// winner's entry in flight.
func TestConcurrentClaimsRace(t *testing.T) {
	pool := newPool(t, 16, nil)
	s := newStore(t, pool, pgstore.Config{})
	race := func(t *testing.T, key string, wantTookOver bool) { claimRace(t, s, 64, key, wantTookOver) }
	for round := range 5 {
		t.Run(fmt.Sprintf("Absent/%d", round), func(t *testing.T) {
			race(t, keystoretest.Key(t), false)
		})
		t.Run(fmt.Sprintf("ExpiredLease/%d", round), func(t *testing.T) {
			key := keystoretest.Key(t)
			claim(t, s, key, time.Minute, acquire)
			expireLease(t, pool, s, key)
			race(t, key, true)
		})
		t.Run(fmt.Sprintf("ExpiredRecord/%d", round), func(t *testing.T) {
			key := keystoretest.Key(t)
			c := claim(t, s, key, time.Minute, acquire)
			if err := s.Complete(testCtx(t), key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
				t.Fatal(err)
			}
			expireLease(t, pool, s, key)
			race(t, key, false)
		})
	}
}

// A replay is a plain read: it neither waits for a transaction holding the
// key's row lock nor writes anything, whatever token it carries; nor does
// the claim of a key in flight.
func TestReplayTakesNoLockAndWritesNothing(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	done, running := keystoretest.Key(t), keystoretest.Key(t)
	c := claim(t, s, done, time.Minute, acquire)
	if err := s.Complete(ctx, done, c.Token, jsonBytes(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	claim(t, s, running, time.Minute, acquire)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT FROM "+s.Table()+" WHERE key IN ($1, $2) FOR UPDATE", done, running); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if got, err := s.Claim(short, done, args(time.Minute)); err != nil || got.State != keystore.Completed {
		t.Errorf("replay while another transaction locks the row: %v, %v; want completed at once", got.State, err)
	}
	if got, err := s.Claim(short, running, args(time.Minute)); err != nil || got.State != keystore.InFlight {
		t.Errorf("claim of an in-flight key while another transaction locks the row: %v, %v; want in flight at once", got.State, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	version := func(key string) string {
		var v string
		err := pool.QueryRow(ctx, "SELECT k.xmin::text || ' ' || k.ctid::text FROM "+s.Table()+" k WHERE key = $1", key).Scan(&v)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, k := range []struct {
		key  string
		want keystore.State
	}{{done, keystore.Completed}, {running, keystore.InFlight}} {
		before := version(k.key)
		for range 20 {
			claim(t, s, k.key, time.Minute, k.want)
		}
		if after := version(k.key); after != before {
			t.Errorf("20 claims of a key %v changed its row: (xmin ctid) %s, then %s", k.want, before, after)
		}
	}
}

// Several replicas starting at once each migrate; one applies the schema.
func TestMigrateConcurrently(t *testing.T) {
	pool := newPool(t, 16, nil)
	schema := newSchema(t, pool)
	const n = 8
	var wg sync.WaitGroup
	stores := make([]*pgstore.Store, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			s, err := pgstore.New(testCtx(t), pool, pgstore.Config{Schema: schema, PruneInterval: -1})
			if err != nil {
				t.Errorf("replica %d: New: %v", i, err)
				return
			}
			stores[i] = s
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var versions, latest int
	err := pool.QueryRow(testCtx(t), "SELECT count(*), max(version) FROM "+pgx.Identifier{schema, pgstore.DefaultTable + "_migrations"}.Sanitize()).Scan(&versions, &latest)
	if err != nil {
		t.Fatal(err)
	}
	if versions != pgstore.SchemaVersion || latest != pgstore.SchemaVersion {
		t.Errorf("migration table has %d versions up to %d, want %d", versions, latest, pgstore.SchemaVersion)
	}
	// Every replica's store works on the one table.
	key := keystoretest.Key(t)
	c := claim(t, stores[0], key, time.Minute, acquire)
	claim(t, stores[n-1], key, time.Minute, keystore.InFlight)
	if err := stores[n/2].Complete(testCtx(t), key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := stores[1].Migrate(testCtx(t)); err != nil {
		t.Errorf("Migrate of an up-to-date schema: %v", err)
	}
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	s := newStore(t, pool, pgstore.Config{Schema: schema})
	if _, err := pool.Exec(testCtx(t), "INSERT INTO "+pgx.Identifier{schema, pgstore.DefaultTable + "_migrations"}.Sanitize()+" (version) VALUES (99)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(testCtx(t)); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Migrate with schema version 99 in the database: err = %v, want a refusal", err)
	}
}

func TestTableNames(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	odd := `Keys "x"; DROP TABLE y; --`
	s := newStore(t, pool, pgstore.Config{Schema: schema, Table: odd})
	other := newStore(t, pool, pgstore.Config{Schema: schema, Table: "other"})
	var exists bool
	if err := pool.QueryRow(testCtx(t), "SELECT to_regclass($1) IS NOT NULL", s.Table()).Scan(&exists); err != nil || !exists {
		t.Fatalf("table %s: exists %v, %v", s.Table(), exists, err)
	}
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	claim(t, other, key, time.Minute, acquire) // separate tables, separate keys
	if err := s.Complete(testCtx(t), key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	claim(t, s, key, time.Minute, keystore.Completed)

	for _, cfg := range []pgstore.Config{
		{Table: strings.Repeat("t", 49)},
		{Table: "a\x00b"},
		{Table: "\xff"},
		{Schema: strings.Repeat("s", 64)},
		{PruneBatch: -1},
	} {
		if _, err := pgstore.New(testCtx(t), pool, cfg); err == nil {
			t.Errorf("New(%+v) accepted an invalid config", cfg)
		}
	}
	if _, err := pgstore.New(testCtx(t), nil, pgstore.Config{}); err == nil {
		t.Errorf("New with a nil pool succeeded")
	}
}

// Prune deletes expired rows in batches of PruneBatch, keeps live ones and
// those within the grace after their expiry.
func TestPruneInBatches(t *testing.T) {
	tr := &counter{}
	pool := newPool(t, 4, tr)
	s := newStore(t, pool, pgstore.Config{PruneBatch: 100})
	ctx := testCtx(t)
	insert := func(n int, prefix, expires string) {
		_, err := pool.Exec(ctx, `INSERT INTO `+s.Table()+` (key, fingerprint, token, expires_at, status)
			SELECT $1 || g, decode(repeat('00', 32), 'hex'), g, `+expires+`, 200 FROM generate_series(1, $2::integer) g`, prefix, n)
		if err != nil {
			t.Fatal(err)
		}
	}
	insert(250, "old", "now() - interval '1 hour'")
	insert(5, "recent", "now() - interval '5 seconds'")
	insert(10, "live", "now() + interval '1 hour'")
	tr.take()
	n, err := s.Prune(ctx)
	if err != nil || n != 250 {
		t.Fatalf("Prune = %d, %v; want 250", n, err)
	}
	if got := tr.take(); len(got) != 3 {
		t.Errorf("Prune of 250 rows in batches of 100 ran %d statements, want 3", len(got))
	}
	var left int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()).Scan(&left); err != nil || left != 15 {
		t.Errorf("after Prune %d rows are left (%v), want 15", left, err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 0 {
		t.Errorf("second Prune = %d, %v; want 0", n, err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Prune(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Prune with a canceled context: %v", err)
	}
}

// The expiry index bounds a prune's scan.
func TestPruneUsesExpiryIndex(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	if _, err := pool.Exec(ctx, `INSERT INTO `+s.Table()+` (key, fingerprint, token, expires_at)
		SELECT 'k' || g, '\x00', g, now() + g * interval '1 second' FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+s.Table()); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, "EXPLAIN SELECT ctid FROM "+s.Table()+" WHERE expires_at < now() - interval '1 minute' ORDER BY expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(plan, "\n"), "_expires_at_idx") {
		t.Errorf("pruning does not use the expiry index:\n%s", strings.Join(plan, "\n"))
	}
}

func TestJanitor(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{PruneInterval: 10 * time.Millisecond, PruneBatch: 7})
	ctx := testCtx(t)
	if _, err := pool.Exec(ctx, `INSERT INTO `+s.Table()+` (key, fingerprint, token, expires_at)
		SELECT 'k' || g, '\x00', g, now() - interval '1 hour' FROM generate_series(1, 50) g`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the janitor left %d expired rows after 10s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Close()
	s.Close() // idempotent
	claim(t, s, keystoretest.Key(t), time.Minute, acquire)
}

// An expired lease is fenced even when nobody took the key over.
func TestExpiredLeaseFencedWithoutTakeover(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	expireLease(t, pool, s, key)
	if _, err := s.Extend(ctx, key, c.Token, time.Minute); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend after the lease ended: %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete after the lease ended: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release after the lease ended: %v, want ErrLeaseLost", err)
	}
	if got := claim(t, s, key, time.Minute, acquire); !got.TookOver {
		t.Errorf("claim of the abandoned key does not report TookOver")
	}
}

func TestNonPositiveDurations(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	if _, err := s.Claim(ctx, key, args(0)); !errors.Is(err, keystore.ErrInvalidClaim) {
		t.Errorf("Claim with a zero lease: %v, want ErrInvalidClaim", err)
	}
	c := claim(t, s, key, time.Minute, acquire)
	if _, err := s.Extend(ctx, key, c.Token, -time.Second); err == nil {
		t.Errorf("Extend with a negative lease succeeded")
	}
	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), 0); err == nil {
		t.Errorf("Complete with a zero retention succeeded")
	}
	// A sub-microsecond lease is rounded up, not to zero: the key is
	// acquired, held by the Claim's token.
	key2 := keystoretest.Key(t)
	c2 := claim(t, s, key2, time.Nanosecond, acquire)
	var stored int64
	if err := pool.QueryRow(ctx, "SELECT token FROM "+s.Table()+" WHERE key = $1", key2).Scan(&stored); err != nil || keystore.Token(stored) != c2.Token {
		t.Errorf("the key is held by token %d (%v), want the Claim's %d", stored, err, c2.Token)
	}
}

// Leases are judged, and LeaseRemaining computed, by the database clock:
// a lease ending in 90 minutes by the database's clock is reported so,
// whatever the lease the claim asked for and the application's clock say.
func TestDatabaseClock(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	key := keystoretest.Key(t)
	claim(t, s, key, time.Second, acquire)
	if _, err := pool.Exec(testCtx(t), "UPDATE "+s.Table()+" SET expires_at = clock_timestamp() + interval '90 minutes' WHERE key = $1", key); err != nil {
		t.Fatal(err)
	}
	c := claim(t, s, key, time.Second, keystore.InFlight)
	if c.LeaseRemaining <= 89*time.Minute || c.LeaseRemaining > 90*time.Minute {
		t.Errorf("LeaseRemaining = %v, want just under the database's 90 minutes", c.LeaseRemaining)
	}
}

// With SkipMigrate, New leaves the schema alone; Migrate creates it.
func TestSkipMigrate(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{SkipMigrate: true})
	if _, err := s.Claim(testCtx(t), keystoretest.Key(t), args(time.Minute)); err == nil {
		t.Fatalf("Claim succeeded without a schema")
	}
	if err := s.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	claim(t, s, keystoretest.Key(t), time.Minute, acquire)
}

// Header values keep every byte, including those that are not UTF-8, and
// the order of repeated fields.
func TestHeaderBytesSurvive(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	want := record.Record{StatusCode: 200, Header: http.Header{
		"Etag":    {"W/\"\xff\xfe\x80\""},
		"Link":    {"</b>", "</a>", ""},
		"X-Empty": {},
	}}
	if err := s.Complete(testCtx(t), key, c.Token, record.Append(nil, want), time.Hour); err != nil {
		t.Fatal(err)
	}
	got := claim(t, s, key, time.Minute, keystore.Completed)
	if !reflect.DeepEqual(testkit.Decoded(got.Record).Header, want.Header) {
		t.Errorf("header came back as %q, want %q", testkit.Decoded(got.Record).Header, want.Header)
	}
	if testkit.Decoded(got.Record).Body != nil {
		t.Errorf("nil body came back as %q", testkit.Decoded(got.Record).Body)
	}
}

func TestHeaderEncoding(t *testing.T) {
	for _, h := range []http.Header{nil, {}, {"A": {"1", "2"}, "B": {}, "C": {"\x00\xff"}}} {
		got, err := pgstore.DecodeHeader(pgstore.EncodeHeader(h))
		if err != nil || !reflect.DeepEqual(got, h) {
			t.Errorf("round trip of %q: %q, %v", h, got, err)
		}
	}
	good := pgstore.EncodeHeader(http.Header{"Content-Type": {"application/json"}})
	for i := range len(good) {
		if _, err := pgstore.DecodeHeader(good[:i]); err == nil {
			t.Errorf("truncated header (%d of %d bytes) decoded without an error", i, len(good))
		}
	}
	if _, err := pgstore.DecodeHeader(append(good, 0)); err == nil {
		t.Errorf("header with trailing bytes decoded without an error")
	}
	if _, err := pgstore.DecodeHeader([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); err == nil {
		t.Errorf("header claiming 2³² fields decoded without an error")
	}
}

func FuzzDecodeHeader(f *testing.F) {
	f.Add(pgstore.EncodeHeader(http.Header{"Link": {"</a>", "</b>"}, "Etag": {"\xff"}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := pgstore.DecodeHeader(b)
		if err != nil {
			return
		}
		again, err := pgstore.DecodeHeader(pgstore.EncodeHeader(h))
		if err != nil || !reflect.DeepEqual(again, h) {
			t.Fatalf("%q decoded to %q, which round-trips to %q, %v", b, h, again, err)
		}
	})
}
