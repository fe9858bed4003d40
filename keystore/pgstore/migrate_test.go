package pgstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// A table created, and filled, by the previous version of the package
// (schema version 3: migrations 0001 to 0003, applied as that version
// applied them) is migrated by New, and the rows it holds keep their
// meaning: a lease still held, a key released (whose releaser stays
// fenced), a lease run out, a record.
func TestMigrateFromVersion3(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	ctx := testCtx(t)
	ident := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	table := ident(pgstore.DefaultTable)
	expand := strings.NewReplacer(
		"{{table}}", table,
		"{{seq}}", ident(pgstore.DefaultTable+"_token_seq"),
		"{{index}}", pgx.Identifier{pgstore.DefaultTable + "_expires_at_idx"}.Sanitize(),
	)
	if _, err := pool.Exec(ctx, `CREATE TABLE `+ident(pgstore.DefaultTable+"_migrations")+` (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for v, name := range []string{"0001_keys.sql", "0002_token_seq_unowned.sql", "0003_released.sql"} {
		sql, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, expand.Replace(string(sql))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := pool.Exec(ctx, "INSERT INTO "+ident(pgstore.DefaultTable+"_migrations")+" (version) VALUES ($1)", v+1); err != nil {
			t.Fatal(err)
		}
	}

	// Rows as version 3 wrote them (its tokens came from the sequence).
	held, released, ranOut, done := keystoretest.Key(t), keystoretest.Key(t), keystoretest.Key(t), keystoretest.Key(t)
	const heldTok, releasedTok, ranOutTok, doneTok = 11, 12, 13, 14
	rec := record.Record(jsonRecord(`{"v":3}`))
	for _, r := range []struct {
		key, expires string
		token        int64
		released     bool
		status       any
		header, body []byte
	}{
		{held, "clock_timestamp() + interval '1 minute'", heldTok, false, nil, nil, nil},
		{released, "clock_timestamp()", releasedTok, true, nil, nil, nil},
		{ranOut, "clock_timestamp() - interval '1 second'", ranOutTok, false, nil, nil, nil},
		{done, "clock_timestamp() + interval '1 hour'", doneTok, false, int32(rec.StatusCode), pgstore.EncodeHeader(rec.Header), rec.Body},
	} {
		_, err := pool.Exec(ctx, `INSERT INTO `+table+` (key, fingerprint, token, expires_at, released, status, header, body)
			VALUES ($1, $2, $3, `+r.expires+`, $4, $5, $6, $7)`, r.key, fp[:], r.token, r.released, r.status, r.header, r.body)
		if err != nil {
			t.Fatal(err)
		}
	}

	s := newStore(t, pool, pgstore.Config{Schema: schema})
	var versions, latest int
	if err := pool.QueryRow(ctx, "SELECT count(*), max(version) FROM "+ident(pgstore.DefaultTable+"_migrations")).Scan(&versions, &latest); err != nil {
		t.Fatal(err)
	}
	if versions != pgstore.SchemaVersion || latest != pgstore.SchemaVersion {
		t.Fatalf("after New the migration table has %d versions up to %d, want %d", versions, latest, pgstore.SchemaVersion)
	}

	// The lease still held: in flight, and its holder's calls work.
	claim(t, s, held, time.Minute, keystore.InFlight)
	if _, err := s.Extend(ctx, held, heldTok, time.Minute); err != nil {
		t.Errorf("Extend of a lease held before the migration: %v", err)
	}
	if err := s.Release(ctx, held, heldTok); err != nil {
		t.Errorf("Release of a lease held before the migration: %v", err)
	}
	mustBeFenced(t, s, held, heldTok, "the key released after the migration")

	// The released key: its releaser's Release repeats, its releaser is
	// fenced, any other token acquires it without TookOver.
	if err := s.Release(ctx, released, releasedTok); err != nil {
		t.Errorf("Release repeated by the token that released the key before the migration: %v", err)
	}
	mustBeFenced(t, s, released, releasedTok, "the key released before the migration")
	if c := claim(t, s, released, time.Minute, acquire); c.TookOver {
		t.Errorf("the claim of the released key reports TookOver")
	}

	// The lease that ran out: fenced for its holder, taken over by others.
	if err := s.Complete(ctx, ranOut, ranOutTok, record.Append(nil, rec), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete by the holder of a lease that ran out: %v, want ErrLeaseLost", err)
	}
	tok := keystore.NewToken()
	if err := s.Release(ctx, ranOut, tok); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release by a token that never held the key: %v, want ErrLeaseLost", err)
	}
	mustBeFenced(t, s, ranOut, tok, "a lease that ran out before the migration")
	if c := claim(t, s, ranOut, time.Minute, acquire); !c.TookOver {
		t.Errorf("the claim of the lease that ran out does not report TookOver")
	}

	// The record: replayed, and its completer's repeat matches it.
	if c := claim(t, s, done, time.Minute, keystore.Completed); string(testkit.Decoded(c.Record).Body) != string(rec.Body) || testkit.Decoded(c.Record).Header.Get("Content-Type") != "application/json" {
		t.Errorf("record written before the migration replayed as %+v", c.Record)
	}
	if err := s.Complete(ctx, done, doneTok, record.Append(nil, rec), time.Hour); err != nil {
		t.Errorf("Complete repeated by the completer of a record written before the migration: %v", err)
	}
	if left, err := s.Extend(ctx, done, doneTok, time.Minute); err != nil || left != 0 {
		t.Errorf("Extend by the completer of a record written before the migration: %v, %v; want 0, nil", left, err)
	}
}
