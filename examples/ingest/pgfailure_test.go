package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/examples/ingest/service"
)

// pgService starts the service on PostgreSQL with its own tables and
// returns its URL, the feature table and a connection to look into it.
func pgService(t *testing.T, extra ...string) (string, string, *pgx.Conn) {
	t.Helper()
	return pgServiceWith(t, nil, extra...)
}

// pgServiceWith is pgService with the feature store wrapped by wrap.
func pgServiceWith(t *testing.T, wrap func(service.FeatureStore) service.FeatureStore, extra ...string) (string, string, *pgx.Conn) {
	t.Helper()
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	keys, features := "pgfail_keys_"+suffix, "pgfail_features_"+suffix
	t.Cleanup(func() { dropTables(t, keys, features) })
	url := startWith(t, wrap, append([]string{"-store", postgresURL(), "-pg-key-table", keys, "-pg-features-table", features}, extra...)...)
	conn, err := pgx.Connect(context.Background(), postgresURL())
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", postgresURL(), err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return url, features, conn
}

// A permanent PostgreSQL error (here a CHECK constraint, SQLSTATE 23514) is
// answered 422 and recorded: the retry is a replay, never a loop of 503s.
func TestIngestPermanentPostgresErrorIsRecorded(t *testing.T) {
	url, table, conn := pgService(t)
	if _, err := conn.Exec(context.Background(), `ALTER TABLE `+table+` ADD CONSTRAINT no_forbidden CHECK (id <> 'forbidden')`); err != nil {
		t.Fatal(err)
	}
	body := `{"type":"Feature","id":"forbidden","geometry":{"type":"Point","coordinates":[1,2,3]},"properties":null}`
	r, b := do(t, http.MethodPost, url+"/features", "perm", body)
	var p struct {
		Type   string
		Errors []struct{ Pointer, Detail string }
	}
	_ = json.Unmarshal([]byte(b), &p)
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.HasSuffix(p.Type, "#feature-rejected") ||
		len(p.Errors) != 1 || p.Errors[0].Pointer != "" || !strings.Contains(p.Errors[0].Detail, "23514") {
		t.Fatalf("constraint violation: %d %s; want 422 feature-rejected naming the feature (pointer \"\") and SQLSTATE 23514", r.StatusCode, b)
	}
	again, b2 := do(t, http.MethodPost, url+"/features", "perm", body)
	if again.StatusCode != http.StatusUnprocessableEntity || b2 != b || again.Header.Get("Idempotent-Replayed") != "true" ||
		again.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("retry: %d replayed=%q Cache-Control=%q; want the recorded 422, no-store", again.StatusCode,
			again.Header.Get("Idempotent-Replayed"), again.Header.Get("Cache-Control"))
	}
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows (%v), want none", n, err)
	}
}

// A store error that is not the feature's own fault, here a trigger's
// RAISE EXCEPTION (SQLSTATE P0001, which no rule of the service knows),
// raised once, is transient: 503 feature-store-unavailable with
// Retry-After, the key released, and the retry with the same key stores the
// feature, once. Before, it was a recorded 422 "Features refused", and the
// sender dead-lettered a valid event for good: an unknown error must be
// transient.
func TestIngestUnknownStoreErrorIsReleased(t *testing.T) {
	url, table, conn := pgService(t)
	ctx := context.Background()
	seq, fn := pgx.Identifier{table + "_raised"}.Sanitize(), pgx.Identifier{table + "_raise_once"}.Sanitize()
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+table)
		_, _ = conn.Exec(context.Background(), `DROP FUNCTION IF EXISTS `+fn+`() CASCADE`)
		_, _ = conn.Exec(context.Background(), `DROP SEQUENCE IF EXISTS `+seq)
	})
	for _, q := range []string{
		`CREATE SEQUENCE ` + seq,
		// nextval is not rolled back with the transaction: the second
		// attempt passes.
		`CREATE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('` + seq + `') = 1 THEN
				RAISE EXCEPTION 'refused once by a trigger';
			END IF;
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER raise_once BEFORE INSERT OR UPDATE ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	body := `{"type":"Feature","id":"raised","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
	r, b := do(t, http.MethodPost, url+"/features", "raise", body)
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(b, "#feature-store-unavailable") {
		t.Fatalf("a trigger's P0001: %d %s Retry-After=%q; want 503 feature-store-unavailable with Retry-After (unknown means transient)",
			r.StatusCode, b, r.Header.Get("Retry-After"))
	}
	r, b = do(t, http.MethodPost, url+"/features", "raise", body)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry: %d replayed=%q %s; want 201, executed", r.StatusCode, r.Header.Get("Idempotent-Replayed"), b)
	}
	var writes int
	if err := conn.QueryRow(ctx, `SELECT writes FROM `+table+` WHERE id = 'raised'`).Scan(&writes); err != nil || writes != 1 {
		t.Fatalf("writes = %d (%v), want 1", writes, err)
	}
}

// A connection killed while the write's transaction is open
// (pg_terminate_backend) is transient: 503 with Retry-After, the key
// released, and the retry with the same key stores the feature, once.
func TestIngestKilledConnectionIsReleased(t *testing.T) {
	// The write pauses 2 s inside its transaction, before the commit.
	url, table, conn := pgServiceWith(t, hook(nil, 2*time.Second))
	body := `{"type":"Feature","id":"killed","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
	type answer struct {
		resp *http.Response
		body string
	}
	done := make(chan answer, 1)
	go func() {
		r, b := do(t, http.MethodPost, url+"/features", "kill", body)
		done <- answer{r, b}
	}()
	// Find the backend whose transaction holds the write, and kill it.
	deadline := time.Now().Add(10 * time.Second)
	killed := false
	for !killed && time.Now().Before(deadline) {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE state = 'idle in transaction' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, table).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		killed = n > 0
		if !killed {
			time.Sleep(10 * time.Millisecond) // polling another process: no clock to inject
		}
	}
	if !killed {
		t.Fatal("no backend with the write's open transaction within 10s")
	}
	a := <-done
	if a.resp.StatusCode != http.StatusServiceUnavailable || a.resp.Header.Get("Retry-After") == "" || !strings.Contains(a.body, "#feature-store-unavailable") {
		t.Fatalf("killed connection: %d %s Retry-After=%q; want 503 feature-store-unavailable with Retry-After",
			a.resp.StatusCode, a.body, a.resp.Header.Get("Retry-After"))
	}
	r, b := do(t, http.MethodPost, url+"/features", "kill", body)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after the kill: %d replayed=%q %s; want 201, executed", r.StatusCode, r.Header.Get("Idempotent-Replayed"), b)
	}
	var writes int
	if err := conn.QueryRow(context.Background(), `SELECT writes FROM `+table+` WHERE id = 'killed'`).Scan(&writes); err != nil || writes != 1 {
		t.Fatalf("writes = %d (%v), want 1: the killed transaction wrote nothing", writes, err)
	}
}

// A feature table of an earlier version (geometry(Geometry, 4326) and
// jsonb) is migrated at start: its rows stay readable and 3D geometry and
// NUL escapes are then stored.
func TestIngestMigratesEarlierFeatureTable(t *testing.T) {
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	keys, features := "migrate_keys_"+suffix, "migrate_features_"+suffix
	t.Cleanup(func() { dropTables(t, keys, features) })
	conn, err := pgx.Connect(context.Background(), postgresURL())
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", postgresURL(), err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`CREATE EXTENSION IF NOT EXISTS postgis`,
		`CREATE TABLE ` + features + ` (id text PRIMARY KEY, geom geometry(Geometry, 4326), feature jsonb NOT NULL,
			writes integer NOT NULL DEFAULT 1, updated_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO ` + features + ` (id, geom, feature) VALUES ('old', ST_SetSRID(ST_MakePoint(1, 2), 4326),
			'{"type":"Feature","id":"old","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}')`,
	} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	url := start(t, "-store", postgresURL(), "-pg-key-table", keys, "-pg-features-table", features)
	if r, b := do(t, http.MethodGet, url+"/features/old", "", ""); r.StatusCode != http.StatusOK || !strings.Contains(b, `"old"`) {
		t.Errorf("GET of a row written before the migration: %d %s", r.StatusCode, b)
	}
	body := `{"type":"Feature","id":"new","geometry":{"type":"Point","coordinates":[1,2,3]},"properties":{"s":"a\u0000b"}}`
	if r, b := do(t, http.MethodPost, url+"/features", "m1", body); r.StatusCode != http.StatusCreated {
		t.Fatalf("POST after the migration: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, http.MethodGet, url+"/features/new", "", ""); b != body {
		t.Errorf("GET /features/new: %d %s, want the bytes posted", r.StatusCode, b)
	}
	checkPostGIS(t, conn, features, "migrated", "new", 3)
}
