package keystore

import (
	"context"
	"sync/atomic"
	"time"
)

// Hold is a request's hold on its key: what the middleware acquired before
// running the handler, handed to the handler through the request context.
//
// Most handlers never look at it: the middleware records their response when
// they return. A handler that records the response itself, inside the same
// database transaction as its own writes (see package pgstore), uses Key,
// Token and Retention to do so and then calls MarkCompleted, so that the
// middleware does not record the response a second time.
type Hold struct {
	// Key is the stored key: the hash of the request's scope and its
	// Idempotency-Key, never the raw client value.
	Key string
	// Token is the fencing token that holds Key.
	Token Token
	// Retention is how long the middleware would keep the record.
	Retention time.Duration

	completed atomic.Bool
}

// MarkCompleted tells the middleware that the key has been completed, and
// the record committed, by someone else: it will neither complete nor
// release the key when the handler returns. Call it only after the commit
// that stored the record has succeeded.
func (h *Hold) MarkCompleted() { h.completed.Store(true) }

// Completed reports whether MarkCompleted was called.
func (h *Hold) Completed() bool { return h.completed.Load() }

type holdKey struct{}

// ContextWithHold returns a copy of ctx that carries h.
func ContextWithHold(ctx context.Context, h *Hold) context.Context {
	return context.WithValue(ctx, holdKey{}, h)
}

// HoldFromContext returns the Hold carried by ctx, if any.
func HoldFromContext(ctx context.Context) (*Hold, bool) {
	h, ok := ctx.Value(holdKey{}).(*Hold)
	return h, ok && h != nil
}
