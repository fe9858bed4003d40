package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

// A fake Redis error reply, as go-redis returns them.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

func TestTransient(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Code: code, Message: "m"} }
	postgis := &pgconn.PgError{Code: "XX000", Message: "Polygon must have at least four points in each ring", File: "lwgeom_pg.c", Routine: "pg_error"}
	cases := []struct {
		name      string
		err       error
		transient bool
	}{
		// Permanent: no retry can fix them.
		{"22001 string too long", pg("22001"), false},
		{"22P02 invalid text", pg("22P02"), false},
		{"22023 invalid parameter (Z on a 2D column)", pg("22023"), false},
		{"23505 unique violation", pg("23505"), false},
		{"23514 check violation", fmt.Errorf("batch: %w", pg("23514")), false},
		{"54000 value too large", pg("54000"), false},
		{"PostGIS geometry error", postgis, false},
		{"42P01 undefined table (a bug)", pg("42P01"), false},
		{"XX000 outside PostGIS", pg("XX000"), false},
		{"request larger than the feature store", errTooLarge, false},
		{"an unknown error", errors.New("handler bug"), false},

		// Transient: a retry may succeed.
		{"40001 serialization failure", pg("40001"), true},
		{"40P01 deadlock", pg("40P01"), true},
		{"53300 too many connections", pg("53300"), true},
		{"53100 disk full", pg("53100"), true},
		{"57P01 admin shutdown (pg_terminate_backend)", fmt.Errorf("commit: %w", pg("57P01")), true},
		{"57014 query canceled", pg("57014"), true},
		{"08006 connection failure", pg("08006"), true},
		{"25006 read-only transaction (failover)", pg("25006"), true},
		{"55P03 lock not available", pg("55P03"), true},
		{"context deadline", context.DeadlineExceeded, true},
		{"context canceled", fmt.Errorf("x: %w", context.Canceled), true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"EOF", io.EOF, true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"closed network connection", net.ErrClosed, true},
		{"pgx conn closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		{"redis client closed", redis.ErrClosed, true},
		{"redis pool timeout", redis.ErrPoolTimeout, true},
		{"redis LOADING", redisReply("LOADING Redis is loading the dataset in memory"), true},
		{"redis READONLY", redisReply("READONLY You can't write against a read only replica."), true},
		{"redis CLUSTERDOWN", redisReply("CLUSTERDOWN The cluster is down"), true},
		{"redis TRYAGAIN", redisReply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"redis OOM", redisReply("OOM command not allowed when used memory > 'maxmemory'."), true},
		{"redis WRONGTYPE (a bug)", redisReply("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"feature store full", fmt.Errorf("x: %w", errStoreFull), true},
	}
	for _, c := range cases {
		if got := Transient(c.err); got != c.transient {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.transient)
		}
	}
	if Transient(nil) {
		t.Error("Transient(nil) = true")
	}
}

// The errors PostgreSQL and PostGIS really raise are classified as the
// table above says.
func TestTransientOnRealPostgresErrors(t *testing.T) {
	url := os.Getenv("GEOIDEM_TEST_POSTGRES")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
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
		transient bool
	}{
		{"truncated EWKB", `SELECT ST_GeomFromEWKB('\x0103000000'::bytea)`, false},
		{"polygon ring too short", `SELECT ST_GeomFromEWKB('\x010300000001000000020000000000000000000000000000000000000000000000000000000000000000000000'::bytea)`, false},
		{"mixed-dimension collection", `SELECT ST_GeomFromText('GEOMETRYCOLLECTION(POINT(0 0), POINT Z(1 1 1))')`, false},
		{"division by zero (22012)", `SELECT 1/0`, false},
		{"check violation (23514)", `CREATE TEMP TABLE t_check (x int CHECK (x > 0)); INSERT INTO t_check VALUES (-1)`, false},
		{"value too large (54000)", `SELECT repeat('x', 1 << 30)::text || repeat('x', 1 << 30)`, false},
		{"statement timeout (57014)", `SET statement_timeout = 10; SELECT pg_sleep(1)`, true},
	} {
		_, err := conn.Exec(ctx, c.sql)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		if got := Transient(err); got != c.transient {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, err, got, c.transient)
		}
		if postgis := strings.Contains(c.sql, "ST_"); postgis != strings.HasPrefix(refusal(err), "PostGIS refused the geometry") {
			t.Errorf("%s: the 422 says %q", c.name, refusal(err))
		}
		_, _ = conn.Exec(ctx, `RESET statement_timeout`)
	}
}
