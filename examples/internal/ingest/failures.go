package ingest

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

// Transient reports whether a failed feature write may succeed if the
// sender retries: the one rule by which the ingest handler answers a store
// error, documented in the README ("Permanent or transient failures").
//
// Transient errors are answered 503 with Retry-After, so the middleware
// releases the key and the sender's retry runs the handler again:
//
//   - PostgreSQL SQLSTATE classes 08 (connection exception), 40
//     (transaction rollback: 40001 serialization failure, 40P01 deadlock),
//     53 (insufficient resources), 57 (operator intervention: 57P01 from
//     pg_terminate_backend, 57014 query canceled), 58 (system error), and
//     the codes 25006 (read-only transaction: a standby after a failover)
//     and 55P03 (lock not available);
//   - lost or refused connections: io.EOF, io.ErrUnexpectedEOF,
//     net.ErrClosed, ECONNRESET, ECONNREFUSED, EPIPE, ECONNABORTED, any
//     net.Error, pgx's ErrConnClosed and ConnectError, and any error pgx
//     says is safe to retry;
//   - timeouts and cancellations: context.DeadlineExceeded,
//     context.Canceled, pgx timeouts;
//   - Redis: a closed client, pool timeout or exhaustion, and the replies
//     LOADING, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, BUSY and OOM;
//   - the in-memory feature store being full (errStoreFull).
//
// Every other error is permanent: answered 422 and recorded, so every
// retry is answered the same and the sender stops. That includes the
// PostgreSQL classes 22 (data exception) and 23 (integrity constraint
// violation), 54 (program limit exceeded: a value too large), the PostGIS
// geometry errors (SQLSTATE XX000 raised from PostGIS's lwgeom_pg.c, such
// as "Polygon must have at least four points in each ring"), a request
// larger than the whole in-memory store (errTooLarge), and errors this
// function does not know. Treating unknown errors as permanent is
// deliberate: a handler bug (a typo in SQL is 42601, a missing table 42P01)
// must end in a recorded, logged failure the sender sees, never in a
// retry loop that runs until the sender's deadline, on every delivery,
// and loses the event anyway.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:min(2, len(pgErr.Code))] {
		case "08", "40", "53", "57", "58":
			return true
		}
		return pgErr.Code == "25006" || pgErr.Code == "55P03"
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		for _, prefix := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM"} {
			if redis.HasErrorPrefix(err, prefix) {
				return true
			}
		}
		return false
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	switch {
	case errors.Is(err, errStoreFull),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), pgconn.Timeout(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED), errors.As(err, &netErr),
		errors.Is(err, pgconn.ErrConnClosed), errors.As(err, &connectErr), pgconn.SafeToRetry(err),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return true
	}
	return false
}

// refusal is what the 422 of a permanent failure says: the database's own
// message for a PostgreSQL error (its SQLSTATE and text, never a
// connection string), a fixed text otherwise.
func refusal(err error) string {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "XX000" && strings.HasPrefix(pgErr.File, "lwgeom"):
		return "PostGIS refused the geometry: " + pgErr.Message
	case pgErr != nil:
		return "the database refused the features (SQLSTATE " + pgErr.Code + "): " + pgErr.Message
	case errors.Is(err, errTooLarge):
		return errTooLarge.Error()
	}
	return "the feature store refused the features; the error is logged"
}
