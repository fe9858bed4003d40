package middleware

import (
	"context"

	"github.com/geoidem/geoidem/keystore"
)

// HoldFromContext returns the [keystore.Hold] of the request whose handler
// ctx belongs to (ctx is, or derives from, the context the middleware
// passed to the handler): what the middleware acquired before running it.
// A handler that records its response itself, in its own database
// transaction, passes it to the store (pgstore's InTx and CompleteTx). It
// reports false for any other context.
func HoldFromContext(ctx context.Context) (*keystore.Hold, bool) {
	h, ok := ctx.Value(holdKey{}).(*keystore.Hold)
	return h, ok && h != nil
}

type holdKey struct{}

// holdContext is the handler's context before its cancellation: its
// parent, and the request's hold. It lives in the exchange, so handing the
// hold over allocates nothing.
type holdContext struct {
	context.Context
	hold *keystore.Hold
}

func (c *holdContext) Value(key any) any {
	if key == (holdKey{}) {
		return c.hold
	}
	return c.Context.Value(key)
}
