package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

func TestTransient(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Code: code, Message: "m"} }
	postgis := &pgconn.PgError{Code: "XX000", Message: "Polygon must have at least four points in each ring", File: "lwgeom_pg.c", Routine: "pg_error"}
	for _, c := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"nil", nil, false},
		// Permanent: no retry can fix them.
		{"22001 string too long", pg("22001"), false},
		{"22P02 invalid text", pg("22P02"), false},
		{"23505 unique violation", pg("23505"), false},
		{"23514 check violation", fmt.Errorf("batch: %w", pg("23514")), false},
		{"54000 value too large", pg("54000"), false},
		{"PostGIS geometry error", postgis, false},
		// Transient: a retry may succeed, or nothing says it cannot (an
		// unknown error is transient).
		{"42P01 undefined table (a bug)", pg("42P01"), true},
		{"P0001 a trigger's exception", pg("P0001"), true},
		{"XX000 outside PostGIS", pg("XX000"), true},
		{"an unknown error", errors.New("handler bug"), true},
		{"lease lost", fmt.Errorf("complete: %w", keystore.ErrLeaseLost), true},
		{"40001 serialization failure", pg("40001"), true},
		{"40P01 deadlock", pg("40P01"), true},
		{"53300 too many connections", pg("53300"), true},
		{"57P01 admin shutdown", fmt.Errorf("commit: %w", pg("57P01")), true},
		{"57014 query canceled", pg("57014"), true},
		{"08006 connection failure", pg("08006"), true},
		{"25006 read-only transaction (failover)", pg("25006"), true},
		{"55P03 lock not available", pg("55P03"), true},
		{"context deadline", context.DeadlineExceeded, true},
		{"context canceled", fmt.Errorf("x: %w", context.Canceled), true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"pgx conn closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
	} {
		if got := pgstore.Transient(c.err); got != c.transient {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.transient)
		}
	}
}

// The errors the server really raises are classified as the table says.
func TestTransientOnServerErrors(t *testing.T) {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, connString())
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", connString(), err)
	}
	defer conn.Close(context.Background())
	for _, c := range []struct {
		name, sql string
		transient bool
	}{
		{"division by zero (22012)", `SELECT 1/0`, false},
		{"undefined table (42P01)", `SELECT * FROM geoidem_no_such_table`, true},
		{"a trigger's exception (P0001)", `DO $$ BEGIN RAISE EXCEPTION 'refused by a trigger'; END $$`, true},
		{"statement timeout (57014)", `SET statement_timeout = 10; SELECT pg_sleep(1)`, true},
	} {
		_, err := conn.Exec(ctx, c.sql)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if got := pgstore.Transient(err); got != c.transient {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, err, got, c.transient)
		}
		_, _ = conn.Exec(ctx, `RESET statement_timeout`)
	}
	// A connection refused: nothing listens on port 1.
	_, err = pgx.Connect(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5")
	if err == nil || !pgstore.Transient(err) {
		t.Errorf("connecting to a closed port: Transient(%v) = false, want true", err)
	}
}
