package pgstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// A process of schema version 7 that shares the table keeps claiming
// across the migration to version 8, which gives the claim function a row
// type of its own: its first statement, prepared on its connection before
// the migration, runs on after it and returns the same columns.
func TestMigrateFromVersion7KeepsItsClaimStatement(t *testing.T) {
	pool := newPool(t, 1, nil) // one connection: the old process's
	schema := newSchema(t, pool)
	ctx := testCtx(t)
	ident := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	const table = "v7"
	expand := strings.NewReplacer(
		"{{table}}", ident(table),
		"{{seq}}", ident(table+"_token_seq"),
		"{{index}}", pgx.Identifier{table + "_expires_at_idx"}.Sanitize(),
		"{{clients}}", ident(table+"_clients"),
		"{{shards}}", ident(table+"_client_shards"),
		"{{claimfn}}", ident(table+"_claim"),
	)
	if _, err := pool.Exec(ctx, `CREATE TABLE `+ident(table+"_migrations")+` (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for v, name := range files[:7] {
		sql, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, expand.Replace(string(sql))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := pool.Exec(ctx, "INSERT INTO "+ident(table+"_migrations")+" (version) VALUES ($1)", v+1); err != nil {
			t.Fatal(err)
		}
	}
	// Version 7's first statement of a claim, as it sent it.
	old := `SELECT * FROM ` + ident(table+"_claim") + `($1::text, $2::bytea, $3::bigint, $4::bigint)`
	oldClaim := func(key string, token int64) (acquired bool, got int64) {
		t.Helper()
		var (
			tookOver          bool
			fpb, header, body []byte
			status            *int32
			remaining         int64
		)
		err := pool.QueryRow(ctx, old, key, fp[:], time.Minute.Microseconds(), token).Scan(&acquired, &tookOver, &got, &fpb, &status, &header, &body, &remaining)
		if err != nil {
			t.Fatalf("version 7's claim of %s: %v", key, err)
		}
		return acquired, got
	}
	if acquired, _ := oldClaim("before", 7); !acquired {
		t.Fatal("version 7's claim of a new key did not acquire it")
	}

	s := newStore(t, newPool(t, 2, nil), pgstore.Config{Schema: schema, Table: table, PruneInterval: -1})
	if acquired, tok := oldClaim("before", 8); acquired || tok != 7 {
		t.Errorf("version 7's claim of a key in flight after the migration: acquired %v, token %d; want the holder's, 7", acquired, tok)
	}
	if acquired, _ := oldClaim("after", 9); !acquired {
		t.Error("version 7's claim of a new key after the migration did not acquire it")
	}
	c, err := s.Claim(ctx, "after", keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: 10})
	if err != nil || c.Acquired || c.State != keystore.InFlight {
		t.Errorf("this version's claim of the key version 7 holds: %+v, %v; want in flight, not acquired", c, err)
	}
}
