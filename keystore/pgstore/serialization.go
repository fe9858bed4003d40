package pgstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxSerializationRetries bounds how often one operation reruns its
// statement after a serialization failure.
const maxSerializationRetries = 8

// serializationFailure is SQLSTATE 40001. Under a REPEATABLE READ or
// SERIALIZABLE default (default_transaction_isolation), PostgreSQL aborts a
// statement that meets a row version committed after its snapshot (a claim
// that lost the race for a new key, a fenced UPDATE that waited for a
// takeover) or that SSI cannot order, with this code. The aborted statement
// changed nothing, so running it again is safe.
const serializationFailure = "40001"

func isSerializationFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == serializationFailure
}

// retrySerialization runs stmt, a single statement in a transaction of its
// own, and runs it again (with a fresh snapshot) when it fails with a
// serialization failure, up to maxSerializationRetries times, after a short
// random pause that grows with each attempt. The rerun sees what the
// conflicting statement committed, so a claim that lost a race then reports
// the winner's entry, as it would have under READ COMMITTED.
func retrySerialization(ctx context.Context, stmt func() error) error {
	err := stmt()
	for attempt := 1; attempt <= maxSerializationRetries && err != nil && isSerializationFailure(err); attempt++ {
		if perr := serializationPause(ctx, attempt); perr != nil {
			return err
		}
		err = stmt()
	}
	return err
}

// serializationPause waits before retry number attempt: a short random
// pause that grows with each attempt. It returns ctx.Err() if ctx ends
// first.
func serializationPause(ctx context.Context, attempt int) error {
	pause := time.Duration(rand.Int64N(int64(attempt) * int64(time.Millisecond)))
	t := time.NewTimer(pause)
	select {
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
