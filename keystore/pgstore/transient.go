package pgstore

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Transient reports whether a failed PostgreSQL call (a handler's write in
// [Store.InTx], say) may succeed if the sender retries. It is the rule
// that docs/receiving.md ("Permanent or transient failures") states as
// code: answer a transient error 503 with Retry-After, so that the
// middleware releases the key and the retry runs the handler again, and a
// permanent one 4xx (422, say), so that it is recorded, every retry is
// answered the same and the sender stops.
// [github.com/geoidem/geoidem/problem.Write] writes either as an RFC 9457
// problem document.
//
// Permanent, because the request's own data is at fault and no retry can
// change it: the SQLSTATE classes 22 (data exception), 23 (integrity
// constraint violation) and 54 (program limit exceeded), and PostGIS's
// geometry errors (XX000 raised from lwgeom). nil is no failure.
//
// Every other error is transient, those Transient does not know included:
// lost connections, timeouts, serialization failures and deadlocks, a
// server shutting down, a standby after a failover, and also a handler's
// bug (a typo in SQL, 42601; a missing table, 42P01; a trigger's
// exception, P0001). An unknown error is transient on purpose:
// answered 422 it is recorded and the sender gives a valid event
// up for good; answered 503 it costs retries and, if the fault stays, a
// dead letter that an operator re-drives once it is fixed.
func Transient(err error) bool {
	return err != nil && !permanent(err)
}

// permanent reports whether err is the request's own fault.
func permanent(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code[:min(2, len(pgErr.Code))] {
	case "22", "23", "54":
		return true
	}
	return pgErr.Code == "XX000" && strings.HasPrefix(pgErr.File, "lwgeom")
}
