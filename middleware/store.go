package middleware

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// The middleware's calls of its store, written once: each is bounded by
// Config.StoreTimeout (unless the store is memstore's, which never
// waits: see inProcess) and, where
// the call uses a token, by the time until which the token surely holds its
// key; each is reported to Config.StoreObserver. ctx is the context the call
// inherits its values from: the request's, detached from its cancellation
// (see exchange.base), for every call after the claim.

// storeCtx bounds one store call made under ctx by StoreTimeout and until
// (the zero time: no such bound). A context bounded by StoreTimeout alone
// is made in room, when room is not nil (see sharedDeadline.BoundIn).
func (m *Middleware) storeCtx(ctx context.Context, until time.Time, room *deadlineRoom) (context.Context, context.CancelFunc) {
	switch {
	case m.nonBlocking && until.IsZero():
		return ctx, nop
	case m.nonBlocking:
		return context.WithDeadline(ctx, until)
	case !until.IsZero() && until.Before(time.Now().Add(m.storeTimeout)):
		return context.WithDeadline(ctx, until)
	case m.storeTimeout >= minSharedTimeout && room != nil:
		return m.deadlines.BoundIn(room, ctx, m.storeTimeout), nop
	case m.storeTimeout >= minSharedTimeout:
		return m.deadlines.Bound(ctx, m.storeTimeout), nop
	}
	return context.WithTimeout(ctx, m.storeTimeout)
}

func nop() {}

// detach returns ctx detached from its cancellation, as
// context.WithoutCancel does, with room for the context of the first
// claim made under it: a claim of a store that can block then costs one
// allocation, the two contexts, where it cost two.
func detach(ctx context.Context) context.Context {
	return &detachedContext{uncanceled: uncanceled{parent: ctx}}
}

// detachedContext is a context from detach: uncanceled, and the room of
// its first claim's context.
type detachedContext struct {
	uncanceled
	claim   deadlineRoom // the first claim's context (see callClaim)
	claimed bool         // claim is taken; read and written by the claim's goroutine alone
}

// uncanceled is its parent detached from its cancellation: it never ends,
// and has the values of its parent but for the context package's
// cancelCtx key (the key cancelProbe has a value for), for which it has
// none, as a context.WithoutCancel: so context.Cause finds no cause in it,
// and contexts made from it do not follow the parent's cancellation. It
// is a value, to embed where it lives as long as it is used (exchange):
// then it costs no allocation of its own.
type uncanceled struct {
	parent context.Context
}

func (c *uncanceled) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *uncanceled) Done() <-chan struct{}       { return nil }
func (c *uncanceled) Err() error                  { return nil }

func (c *uncanceled) Value(key any) any {
	if cancelProbe.Value(key) != nil {
		return nil
	}
	return c.parent.Value(key)
}

func (c *uncanceled) String() string { return "middleware.detach" }

func (m *Middleware) callClaim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	var room *deadlineRoom
	if d, ok := ctx.(*detachedContext); ok && !d.claimed {
		d.claimed = true
		room = &d.claim
	}
	cctx, cancel := m.storeCtx(ctx, time.Time{}, room)
	defer cancel()
	start := m.callStart()
	c, err := m.store.Claim(cctx, key, a)
	m.observeCall(cctx, OpClaim, start, err)
	return c, err
}

func (m *Middleware) callExtend(ctx context.Context, key string, tok keystore.Token, until time.Time) (time.Duration, error) {
	cctx, cancel := m.storeCtx(ctx, until, nil)
	defer cancel()
	start := m.callStart()
	left, err := m.store.Extend(cctx, key, tok, m.storeLease)
	m.observeCall(cctx, OpExtend, start, err)
	return left, err
}

func (m *Middleware) callComplete(ctx context.Context, key string, tok keystore.Token, rec []byte, until time.Time, room *deadlineRoom) error {
	cctx, cancel := m.storeCtx(ctx, until, room)
	defer cancel()
	start := m.callStart()
	err := m.store.Complete(cctx, key, tok, rec, m.retention)
	m.observeCall(cctx, OpComplete, start, err)
	return err
}

func (m *Middleware) callRelease(ctx context.Context, key string, tok keystore.Token, until time.Time, room *deadlineRoom) error {
	cctx, cancel := m.storeCtx(ctx, until, room)
	defer cancel()
	start := m.callStart()
	err := m.store.Release(cctx, key, tok)
	m.observeCall(cctx, OpRelease, start, err)
	return err
}

// callStart is when a store call starts, for its observed latency: the
// zero time, never read, when no StoreObserver is set.
func (m *Middleware) callStart() time.Time {
	if m.observeStore == nil {
		return time.Time{}
	}
	return time.Now()
}

func (m *Middleware) observeCall(ctx context.Context, op StoreOp, start time.Time, err error) {
	if m.observeStore != nil {
		m.observeStore(StoreCall{Op: op, Latency: time.Since(start), Err: err, Context: ctx})
	}
}

// StoreOp names a Store operation, in a [StoreCall].
type StoreOp string

// The operations of a Store.
const (
	OpClaim    StoreOp = "claim"
	OpExtend   StoreOp = "extend"
	OpComplete StoreOp = "complete"
	OpRelease  StoreOp = "release"
)

// StoreOps lists the operations, for registering metric series up front.
func StoreOps() []StoreOp { return []StoreOp{OpClaim, OpExtend, OpComplete, OpRelease} }

// StoreCall describes one call of a Store operation, for an observer:
// Config.StoreObserver receives one per call the middleware makes, and
// pgstore's Config.Observer one per completion made in a handler's
// transaction (InTx, CompleteTx), which the middleware does not make.
type StoreCall struct {
	// Op is the operation.
	Op StoreOp
	// Latency is the time the store took to return.
	Latency time.Duration
	// Err is the error the store returned, if any (keystore.ErrLeaseLost
	// included).
	Err error
	// Context is the context the call was made with. It may be done by the
	// time the observer runs; do not keep it.
	Context context.Context
}
