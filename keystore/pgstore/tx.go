package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/middleware"
)

// Record is a response recorded in a handler's transaction (InTx,
// CompleteTx): what the middleware replays to every retry of its request.
type Record struct {
	// StatusCode is the HTTP status: a final one, 200–599.
	StatusCode int
	// Header holds the response headers; the middleware replays those its
	// Config.ReplayHeaders allows. It may be nil.
	Header http.Header
	// Body is the response body, byte for byte. It may be nil.
	Body []byte
}

// finishTimeout bounds the commit and rollback that InTx runs after the
// request context may have been canceled.
const finishTimeout = 10 * time.Second

// CompleteTx records rec as the response of hold's key for the hold's
// Retention, fenced by its Token, inside tx: the record becomes visible,
// and the key completed, only if and when tx commits, together with
// everything else tx wrote. A record over the hold's MaxRecordBytes is kept
// as a too-large record of its status, as the middleware keeps a response
// it cannot record. It fails with an error wrapping [keystore.ErrLeaseLost],
// and changes nothing, if the token no longer holds the key (its lease
// ended, by the database clock, or another claim took the key over); the
// caller must then roll tx back, so that its writes are not applied on
// behalf of a request that no longer owns the key. It fails with an error
// wrapping [keystore.ErrInvalidStatus], before running any statement (tx
// stays usable), if rec.StatusCode is outside 200–599.
//
// From its UPDATE until tx ends, tx holds the key's row lock: a claim that
// would take the expired lease over waits, and then finds the key completed
// (tx committed) or takes it over (tx rolled back). Run CompleteTx as the
// last statement before Commit, to keep that window short. tx must be a
// transaction on the store's database, at the READ COMMITTED isolation level
// (the default); under REPEATABLE READ or SERIALIZABLE a lease renewed while
// tx ran makes it fail with a serialization error instead.
//
// Commit through hold.Commit, which marks the hold completed once the
// commit succeeded, so that the middleware does not complete the key again,
// and keeps the middleware from stopping the handler while the commit holds
// the key; InTx does all of this for you.
func (s *Store) CompleteTx(ctx context.Context, tx pgx.Tx, hold *keystore.Hold, rec Record) error {
	if tx == nil {
		return errors.New("pgstore: complete: nil transaction")
	}
	if hold == nil {
		return errors.New("pgstore: complete: nil hold")
	}
	if err := record.Record(rec).Validate(); err != nil {
		return fmt.Errorf("pgstore: complete: %w", err)
	}
	rec = Record(record.Fit(hold.MaxRecordBytes, record.Record(rec)))
	key, token, retention := hold.Key, hold.Token, hold.Retention
	header := encodeHeader(nil, rec.Header)
	if s.observe == nil {
		return s.complete(ctx, tx, key, token, int32(rec.StatusCode), header, rec.Body, retention)
	}
	start := time.Now()
	err := s.complete(ctx, tx, key, token, int32(rec.StatusCode), header, rec.Body, retention)
	s.observe(middleware.StoreCall{Op: middleware.OpComplete, Latency: time.Since(start), Err: err, Context: ctx})
	return err
}

// InTx runs fn in a new transaction on the store's pool and records the
// response fn returns as the key's record in that same transaction, so that
// fn's writes and the record commit together or not at all. It is meant for
// an HTTP handler behind the geoidem middleware, with the request's
// [keystore.Hold] (middleware.HoldFromContext of the request's context): the
// key, token and retention come from the hold, and after the commit InTx
// marks it completed, so the middleware leaves the key alone.
//
// In order: InTx begins a transaction, calls fn, completes the key with
// CompleteTx (a record over the middleware's MaxRecordBytes is kept as a
// too-large record of its status), commits
// through Hold.Commit (which marks the hold completed), and returns fn's
// record, which the handler then writes to the client: later retries are
// replayed what was recorded. fn must use tx for every write that should be applied
// exactly once, and must not commit or roll tx back.
//
// If fn returns an error, InTx rolls back and returns that error (wrapped
// with keystore.ErrLeaseLost if ctx was canceled because the lease was
// lost): nothing is written and nothing recorded. The handler should then answer
// with a 5xx status, so that the middleware releases the key and a retry can
// run again. fn should not return a record with a status that must not be
// replayed (5xx, 408, 429): InTx records whatever fn returns within
// 200–599. A record with any other status (an unset StatusCode, a 1xx) is
// refused: InTx rolls back and returns an error wrapping
// [keystore.ErrInvalidStatus], nothing is written or recorded, and the key
// stays held, so that the middleware releases it when the handler answers
// 5xx.
//
// If the hold has lost its key (its lease ran out and, possibly, another
// request took the key over; or the middleware, failing to renew the lease,
// canceled ctx with keystore.ErrLeaseLost as its cause), InTx rolls back and
// returns an error wrapping keystore.ErrLeaseLost: fn's writes are discarded
// and the other request's work stands. Any other error (a dropped
// connection, a failed commit) also leaves the hold uncompleted; if it
// struck during the commit, the commit may nevertheless have happened, and
// the sender's retry then gets the recorded response replayed.
//
// Once the record is in, the commit runs (and a failed transaction is rolled
// back) even if ctx is canceled meanwhile, for at most ten seconds: the key is
// fenced by then, and abandoning a commit whose outcome the client will
// learn from its retry would only turn a success into an ambiguous error.
//
// It returns an error, running nothing, if hold is nil (the request did not
// come through the middleware, or its method is not covered) or was already
// completed.
func (s *Store) InTx(ctx context.Context, hold *keystore.Hold, fn func(tx pgx.Tx) (Record, error)) (Record, error) {
	if hold == nil {
		return Record{}, errors.New("pgstore: no idempotency hold: the request did not come through the middleware")
	}
	if hold.Completed() {
		return Record{}, fmt.Errorf("pgstore: key %.16s… already completed by this request", hold.Key)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return Record{}, leaseCause(ctx, storeErr(ctx, "begin", err))
	}
	defer func() {
		// A no-op after a successful commit; after a failure it returns the
		// connection to the pool clean, or has the pool discard it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	rec, err := fn(tx)
	if err != nil {
		return Record{}, leaseCause(ctx, err)
	}
	if err := s.CompleteTx(ctx, tx, hold, rec); err != nil {
		return Record{}, leaseCause(ctx, err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := hold.Commit(func() error { return tx.Commit(cctx) }); err != nil {
		return Record{}, fmt.Errorf("pgstore: commit: %w", err)
	}
	return rec, nil
}

// leaseCause adds keystore.ErrLeaseLost to err when ctx was canceled with it
// as the cause: the middleware cancels a handler's context that way when it
// fails to renew the lease, and the handler should learn that its key is
// lost, not merely that its context ended.
func leaseCause(ctx context.Context, err error) error {
	if ctx.Err() == nil || errors.Is(err, keystore.ErrLeaseLost) {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, keystore.ErrLeaseLost) {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}
