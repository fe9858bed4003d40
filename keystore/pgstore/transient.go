package pgstore

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/geoidem/geoidem/internal/transient"
)

// Transient reports whether a failed PostgreSQL call (a handler's write in
// [Store.InTx], say) may succeed if the sender retries. It is the rule the
// README states, "a failure no retry can fix must not be a 503", as code:
// answer a transient error 503 with Retry-After, so that the middleware
// releases the key and the retry runs the handler again, and a permanent
// one 4xx (422, say), so that it is recorded, every retry is answered the
// same and the sender stops.
// [github.com/geoidem/geoidem/problem.Write] writes either as an
// RFC 9457 problem document.
//
// Transient:
//
//   - SQLSTATE classes 08 (connection exception), 40 (transaction
//     rollback: 40001 serialization failure, 40P01 deadlock), 53
//     (insufficient resources), 57 (operator intervention: 57P01 from
//     pg_terminate_backend, 57014 query canceled), 58 (system error), and
//     the codes 25006 (read-only transaction: a standby after a failover)
//     and 55P03 (lock not available);
//   - lost or refused connections: io.EOF, io.ErrUnexpectedEOF,
//     net.ErrClosed, ECONNRESET, ECONNREFUSED, EPIPE, ECONNABORTED, any
//     net.Error, pgx's ErrConnClosed and ConnectError, and any error pgx
//     says is safe to retry;
//   - timeouts and cancellations: context.DeadlineExceeded,
//     context.Canceled, pgx timeouts.
//
// Every other error is permanent, nil included (it is no failure): the
// classes 22 (data exception), 23 (integrity constraint violation), 54
// (program limit exceeded), PostGIS's geometry errors (XX000 from
// lwgeom_pg.c), and errors Transient does not know. Treating unknown errors
// as permanent is deliberate: a handler bug (a typo in SQL is 42601, a
// missing table 42P01) must end in a recorded failure the sender sees, not
// in retries until the sender's deadline. [keystore.ErrLeaseLost] is
// permanent too: another delivery of the request took the key over, and
// its answer stands.
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
	var connectErr *pgconn.ConnectError
	return transient.Conn(err) || pgconn.Timeout(err) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.As(err, &connectErr) || pgconn.SafeToRetry(err)
}
