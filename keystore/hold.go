package keystore

import (
	"sync/atomic"
	"time"
)

// Hold is a request's hold on its key: what the middleware acquired before
// running the handler, handed to the handler through the request context
// (the middleware's HoldFromContext).
//
// Most handlers never look at it: the middleware records their response when
// they return. A handler that records the response itself, inside the same
// database transaction as its own writes (see package pgstore), uses Key,
// Token and Retention to do so, commits through
// Commit, and so marks the hold completed: the middleware does not record
// the response a second time.
type Hold struct {
	// Key is the stored key: the hash of the request's scope and its
	// Idempotency-Key, never the raw client value.
	Key string
	// Token is the fencing token that holds Key.
	Token Token
	// Retention is how long the middleware would keep the record.
	Retention time.Duration
	// MaxRecordBytes bounds the record kept for Key, in bytes; zero: no
	// bound. A record over it is kept as a too-large record of its status
	// (pgstore's InTx and CompleteTx do so), as the middleware keeps a
	// response it cannot record.
	MaxRecordBytes int

	completed  atomic.Bool
	committing atomic.Int32
}

// Commit runs commit, the commit of the transaction that recorded the
// key's response (pgstore's CompleteTx), and marks the hold completed
// (MarkCompleted) if it succeeds. While commit runs, that transaction
// holds the key, so no other request can take it over; the middleware,
// which renews the lease meanwhile, then never stops the handler for a
// renewal that waits on the transaction (on PostgreSQL, for its row lock).
// pgstore's InTx calls it; a handler that calls CompleteTx itself commits
// through it.
func (h *Hold) Commit(commit func() error) error {
	h.committing.Add(1)
	defer h.committing.Add(-1)
	if err := commit(); err != nil {
		return err
	}
	h.MarkCompleted()
	return nil
}

// Committing reports whether a Commit is running.
func (h *Hold) Committing() bool { return h.committing.Load() > 0 }

// MarkCompleted tells the middleware that the key has been completed, and
// the record committed, by someone else: it will neither complete nor
// release the key when the handler returns. Call it only after the commit
// that stored the record has succeeded (Commit does).
func (h *Hold) MarkCompleted() { h.completed.Store(true) }

// Completed reports whether MarkCompleted was called.
func (h *Hold) Completed() bool { return h.completed.Load() }
