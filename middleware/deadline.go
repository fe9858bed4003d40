// A sharedDeadline bounds many calls by one timeout with one timer: the
// store calls of a geoidem middleware, which all get the same timeout, so
// that a call's bound costs one small context instead of
// context.WithTimeout's timer, context and closure.
//
// Deadlines of calls made in order with one timeout arrive in order: a call
// whose deadline falls within a tick of the latest bucket's joins that
// bucket, else it starts one. A bucket is a deadline and, made the first
// time a call's context is watched or asked for its Done channel, a
// context.WithDeadline of its own, without values, which ends then; a
// call's context is the bucket's deadline with the call's values. A call
// is so bounded by at most its timeout, and at least a tick less.
//
// A call's context hands the bucket's context out as its own cancelCtx,
// the one context.Cause, context.AfterFunc and context.WithCancel look
// for by a key of the context package's: asked for a value, it asks the
// bucket first, which has no value but that one, and then the call's
// parent. So a function registered on it (pgx watches every query's
// context with context.AfterFunc) joins the bucket's children, as it would
// a context.WithTimeout's, with no goroutine, closure or stop function of
// the bucket's own; a context derived from it ends with the bucket's
// context.DeadlineExceeded; and its cause is the bucket's, not its
// parent's.

package middleware

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineTick is the width of a bucket: how much earlier than its timeout, at
// most, a context from sharedDeadline.Bound ends. Timeouts shorter than minSharedTimeout
// are not worth sharing: use context.WithTimeout for them.
const (
	deadlineTick     = time.Millisecond
	minSharedTimeout = 10 * deadlineTick
)

// sharedDeadline hands out contexts that end a timeout after they were made,
// one timer a bucket. The zero value is ready to use. The timeouts given to
// one sharedDeadline should be equal (or rarely change): a context whose
// deadline falls before the latest bucket's starts a bucket of its own.
type sharedDeadline struct {
	mu     sync.Mutex
	latest *deadlineBucket // nil before the first
}

// deadlineBucket is the deadline of the contexts that share it, and the
// context that ends then, made when one of them is first asked for its
// Done channel or watched (context.AfterFunc, context.WithCancel): a
// store call that does neither (a Redis command on its way at once) costs
// the bucket no timer, no context and no channel. Until then the clock
// tells whether the deadline has passed.
type deadlineBucket struct {
	at     time.Time
	ctx    atomic.Value       // context.Context: context.WithDeadline(context.Background(), at)
	cancel context.CancelFunc // ctx's, never called: ctx ends at its deadline, when its timer releases what it holds
}

// context returns the bucket's context, made if it is not yet.
func (b *deadlineBucket) context() context.Context {
	if c := b.ctx.Load(); c != nil {
		return c.(context.Context)
	}
	c, cancel := context.WithDeadline(context.Background(), b.at)
	if b.ctx.CompareAndSwap(nil, c) {
		b.cancel = cancel // written once, by the one that made ctx
		return c
	}
	cancel() // another made it first; this one was never seen
	return b.ctx.Load().(context.Context)
}

// boundContext is a context from sharedDeadline.Bound: the values of its
// parent, and the deadline of its bucket.
type boundContext struct {
	parent context.Context // for its values only
	b      *deadlineBucket
}

// Bound returns a context with parent's values (every one but the
// context package's own: see above) that ends timeout from now, or at most
// a deadlineTick earlier, with context.DeadlineExceeded. It does not end
// with parent: give it a parent without cancellation
// (context.WithoutCancel). timeout must be at least minSharedTimeout. The
// context needs no cancel: it holds nothing once its bucket has ended.
func (s *sharedDeadline) Bound(parent context.Context, timeout time.Duration) context.Context {
	return &boundContext{parent: parent, b: s.deadlineBucket(timeout)}
}

// deadlineRoom is the memory of one context from BoundIn, to embed in a value that
// lives as long as the context is used: a bound then costs no allocation
// of its own.
type deadlineRoom struct{ c boundContext }

// BoundIn is Bound, its context made in room rather than allocated. room
// must not hold a context still in use: one a call (or what it left
// watching the context, as pgx's AfterFunc) may still read.
func (s *sharedDeadline) BoundIn(room *deadlineRoom, parent context.Context, timeout time.Duration) context.Context {
	room.c = boundContext{parent: parent, b: s.deadlineBucket(timeout)}
	return &room.c
}

// deadlineBucket returns the bucket of a context that ends timeout from now.
func (s *sharedDeadline) deadlineBucket(timeout time.Duration) *deadlineBucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Now is read under the lock (on the monotonic clock, as Sub compares
	// it), so that deadlines, and the buckets, come in order.
	at := time.Now().Add(timeout)
	if b := s.latest; b != nil && at.Sub(b.at) < deadlineTick && !at.Before(b.at) {
		return b
	}
	s.latest = &deadlineBucket{at: at}
	return s.latest
}

func (c *boundContext) Deadline() (time.Time, bool) { return c.b.at, true }
func (c *boundContext) Done() <-chan struct{}       { return c.b.context().Done() }

func (c *boundContext) Err() error {
	if b := c.b.ctx.Load(); b != nil {
		return b.(context.Context).Err()
	}
	// No Done channel yet, so none to agree with: the clock decides, and
	// a context made once the deadline has passed is made ended.
	if time.Now().Before(c.b.at) {
		return nil
	}
	return context.DeadlineExceeded
}

// Value returns the bucket's context, made if need be, for the context
// package's cancelCtx key (the one key for which cancelProbe has a value),
// and parent's value for any other. Through that key, a context derived
// from c (context.WithCancel, AfterFunc: pgx watches every query so)
// hangs on the bucket's own cancelCtx instead of a goroutine of its own.
// The key is the context package's business: were it to change, cancelProbe
// would have no value for any key, and a derived context would watch c
// through its Done channel as it does any other context's: as correct,
// only dearer.
func (c *boundContext) Value(key any) any {
	if cancelProbe.Value(key) != nil {
		return c.b.context().Value(key)
	}
	return c.parent.Value(key)
}

// cancelProbe is a context.WithCancel of context.Background, never
// canceled: it has a value for the context package's cancelCtx key alone.
var cancelProbe, _ = context.WithCancel(context.Background())

func (c *boundContext) String() string { return "deadline.sharedDeadline.Bound" }
