package keystore

import (
	"context"
	"time"
)

// Op names a Store operation, in a [Call].
type Op string

// The operations of a Store.
const (
	OpClaim    Op = "claim"
	OpExtend   Op = "extend"
	OpComplete Op = "complete"
	OpRelease  Op = "release"
)

// Ops lists the operations, for registering metric series up front.
func Ops() []Op { return []Op{OpClaim, OpExtend, OpComplete, OpRelease} }

// Call describes one call of a Store operation, for an observer: the
// middleware's Config.StoreObserver receives one per call it makes, and
// pgstore's Config.Observer one per completion made in a handler's
// transaction (InTx, CompleteTx), which the middleware does not make.
type Call struct {
	// Op is the operation.
	Op Op
	// Latency is the time the store took to return.
	Latency time.Duration
	// Err is the error the store returned, if any (ErrLeaseLost included).
	Err error
	// Context is the context the call was made with. It may be done by the
	// time the observer runs; do not keep it.
	Context context.Context
}
