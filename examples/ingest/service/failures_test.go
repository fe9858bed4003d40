package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
)

// refused reports whether err, as a feature statement's error, is the
// feature's own fault, and the RefusedError's pointer.
func refused(err error) (bool, string) {
	var re *RefusedError
	if errors.As(refusedByPostgres(3, err), &re) {
		return true, re.Pointer
	}
	return false, ""
}

// conflicted reports whether err, as a feature statement's error, is a
// conflict with other rows.
func conflicted(err error) bool {
	var ce *ConflictError
	return errors.As(refusedByPostgres(3, err), &ce) && ce.Index == 3
}

// Only the feature's own faults are refused (422, recorded); every other
// error, an unknown one above all, is left as it is, which the handler
// answers 503 and releases: unknown means transient.
func TestRefusedByPostgres(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Code: code, Message: "m"} }
	postgis := &pgconn.PgError{Code: "XX000", Message: "Polygon must have at least four points in each ring", File: "lwgeom_pg.c", Routine: "pg_error"}
	cases := []struct {
		name    string
		err     error
		refused bool
	}{
		// The feature's own fault: no retry can fix it.
		{"22001 string too long", pg("22001"), true},
		{"22P02 invalid text", pg("22P02"), true},
		{"22023 invalid parameter (Z on a 2D column)", pg("22023"), true},
		{"23514 check violation", fmt.Errorf("batch: %w", pg("23514")), true},
		{"23502 not-null violation", pg("23502"), true},
		{"54000 value too large", pg("54000"), true},
		{"PostGIS geometry error", postgis, true},

		// Not known as the feature's fault: transient, whatever it is.
		{"P0001 a trigger's RAISE EXCEPTION", pg("P0001"), false},
		{"42P01 undefined table (a deployment's bug)", pg("42P01"), false},
		{"42601 syntax error (a handler's bug)", pg("42601"), false},
		{"XX000 outside PostGIS", pg("XX000"), false},
		{"an unknown error", errors.New("handler bug"), false},
		{"40001 serialization failure", pg("40001"), false},
		{"40P01 deadlock", pg("40P01"), false},
		{"53300 too many connections", pg("53300"), false},
		{"53100 disk full", pg("53100"), false},
		{"57P01 admin shutdown (pg_terminate_backend)", fmt.Errorf("commit: %w", pg("57P01")), false},
		{"57014 query canceled", pg("57014"), false},
		{"08006 connection failure", pg("08006"), false},
		{"25006 read-only transaction (failover)", pg("25006"), false},
		{"25P02 transaction aborted", pg("25P02"), false},
		{"55P03 lock not available", pg("55P03"), false},
		{"lease lost", fmt.Errorf("pgstore: %w", keystore.ErrLeaseLost), false},
		{"context deadline", context.DeadlineExceeded, false},
		{"context canceled", fmt.Errorf("x: %w", context.Canceled), false},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false},
		{"EOF", io.EOF, false},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{"pgx conn closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), false},
		{"redis client closed", redis.ErrClosed, false},
	}
	for _, c := range cases {
		if got, _ := refused(c.err); got != c.refused {
			t.Errorf("%s: refused(%v) = %v, want %v", c.name, c.err, got, c.refused)
		}
		if conflicted(c.err) {
			t.Errorf("%s: a conflict with other rows", c.name)
		}
	}
	// A conflict with other rows, which another write can lift: neither
	// refused for good nor left as an unknown error.
	for _, code := range []string{"23503", "23505", "23P01", "23001"} {
		if got, _ := refused(pg(code)); got || !conflicted(fmt.Errorf("batch: %w", pg(code))) {
			t.Errorf("SQLSTATE %s: refused %v, conflict %v; want a conflict", code, got, conflicted(pg(code)))
		}
	}
	if _, pointer := refused(postgis); pointer != "/geometry" {
		t.Errorf("a PostGIS refusal points at %q, want /geometry", pointer)
	}
}

// The errors PostgreSQL and PostGIS really raise are classified as the
// table above says.
func TestRefusedOnRealPostgresErrors(t *testing.T) {
	url := postgresURL()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS postgis`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, sql string
		refused   bool
	}{
		{"truncated EWKB", `SELECT ST_GeomFromEWKB('\x0103000000'::bytea)`, true},
		{"polygon ring too short", `SELECT ST_GeomFromEWKB('\x010300000001000000020000000000000000000000000000000000000000000000000000000000000000000000'::bytea)`, true},
		{"mixed-dimension collection", `SELECT ST_GeomFromText('GEOMETRYCOLLECTION(POINT(0 0), POINT Z(1 1 1))')`, true},
		{"division by zero (22012)", `SELECT 1/0`, true},
		{"check violation (23514)", `CREATE TEMP TABLE t_check (x int CHECK (x > 0)); INSERT INTO t_check VALUES (-1)`, true},
		{"foreign key violation (23503)", `CREATE TEMP TABLE t_parent (id int PRIMARY KEY); CREATE TEMP TABLE t_child (id int REFERENCES t_parent); INSERT INTO t_child VALUES (1)`, false},
		{"unique violation (23505)", `CREATE TEMP TABLE t_unique (x int UNIQUE); INSERT INTO t_unique VALUES (1), (1)`, false},
		{"value too large (54000)", `SELECT repeat('x', 1 << 30)::text || repeat('x', 1 << 30)`, true},
		{"RAISE EXCEPTION (P0001)", `DO $$ BEGIN RAISE EXCEPTION 'raised'; END $$`, false},
		{"undefined table (42P01)", `SELECT * FROM no_such_table_here`, false},
		{"statement timeout (57014)", `SET statement_timeout = 10; SELECT pg_sleep(1)`, false},
	} {
		_, err := conn.Exec(ctx, c.sql)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		got, pointer := refused(err)
		if got != c.refused {
			t.Errorf("%s: refused(%v) = %v, want %v", c.name, err, got, c.refused)
		}
		if want := strings.Contains(c.sql, "t_child") || strings.Contains(c.sql, "t_unique"); conflicted(err) != want {
			t.Errorf("%s: conflict %v, want %v", c.name, conflicted(err), want)
		}
		if postgis := strings.Contains(c.sql, "ST_"); postgis != (pointer == "/geometry") {
			t.Errorf("%s: pointer %q", c.name, pointer)
		}
		_, _ = conn.Exec(ctx, `RESET statement_timeout`)
	}
}

// postgresURL is the database the tests use: GEOIDEM_TEST_POSTGRES, or the
// loopback server of the development machines.
func postgresURL() string {
	return testkit.SharedPostgresURL()
}
