package middleware

import (
	"context"
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// deadlines bounds store calls by Config.StoreTimeout without a timer, a
// cancel context and a closure per call (context.WithTimeout's cost, twice
// per request). The calls of one Middleware all get the same timeout, so
// their deadlines arrive in order: a call whose deadline falls within a
// tick of the latest bucket's joins that bucket, else it starts one, and
// one shared timer closes each bucket's Done channel at the bucket's
// time. A call is so bounded by at most its timeout, and at least a tick
// less; Deadline reports the bucket's time, when Done closes.
//
// Such a context has its parent's values, not its cancellation: the store
// calls it bounds are detached from the client's (see
// Middleware.storeContext). Its cancel function does nothing: once the
// call has returned nobody watches the context, and it holds no resources
// of its own to give back. Timeouts shorter than minBucketed are not
// shared: they get context.WithTimeout.
type deadlines struct {
	mu      sync.Mutex
	pending []*deadlineBucket // by at, earliest first
	t       *time.Timer
	armed   bool // t will fire for pending[0]
}

// deadlineTick is the width of a bucket: how much earlier than its
// timeout, at most, a store call's context ends.
const (
	deadlineTick = time.Millisecond
	minBucketed  = 10 * deadlineTick
)

type deadlineBucket struct {
	d     *deadlines
	at    time.Time // the deadline of every context in the bucket
	done  chan struct{}
	funcs []func() // AfterFunc's, nil once stopped (slots are not reused); guarded by d.mu
	ended bool     // done is closed; guarded by d.mu
}

// deadlineCtx is a store call's context: the values of its parent, whose
// cancellation it ignores, and the deadline of its bucket. A claim's
// context also carries the claim's token, as keystore.ContextWithClaimToken
// would, without a context of its own.
type deadlineCtx struct {
	parent context.Context // for its values only
	b      *deadlineBucket
	token  any // the claim's keystore.Token, or nil
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.b.at, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.b.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.b.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// Value answers the claim's token, and the parent's values but the one
// by which context.Cause finds a canceled parent: the cause of a store
// call's end is its Err, as for context.WithoutCancel.
func (c *deadlineCtx) Value(key any) any {
	switch {
	case key == claimTokenKey && c.token != nil:
		return c.token
	case key == cancelCtxKey:
		return nil
	}
	return c.parent.Value(key)
}

func (c *deadlineCtx) String() string { return "middleware.storeContext" }

// AfterFunc runs f in a goroutine of its own once c has ended, as
// context.AfterFunc does; having it, c is one to which context.AfterFunc
// (pgx watches every query's context so) and context.WithCancel hook
// without starting a goroutine of their own.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	b := c.b
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if b.ended {
		go f()
		return func() bool { return false }
	}
	i := len(b.funcs)
	b.funcs = append(b.funcs, f)
	return func() bool {
		b.d.mu.Lock()
		defer b.d.mu.Unlock()
		if b.ended || b.funcs[i] == nil {
			return false
		}
		b.funcs[i] = nil
		return true
	}
}

// claimTokenKey and cancelCtxKey are the context keys of
// keystore.ContextWithClaimToken and of the context package's own
// canceled parents, learned once by asking (keyProbe records what it is
// asked).
var claimTokenKey, cancelCtxKey = func() (any, any) {
	var p keyProbe
	var q causeProbe
	keystore.ClaimTokenFromContext(&p)
	_ = context.Cause(&q)
	return p.key, q.key
}()

// causeProbe is a keyProbe that has ended, as context.Cause asks for the
// key only of a context that has.
type causeProbe struct{ keyProbe }

func (*causeProbe) Err() error { return context.Canceled }

// bound returns a context with parent's values, not its cancellation,
// that ends timeout from now, or at most a tick earlier; timeout must be at
// least minBucketed.
func (d *deadlines) bound(parent context.Context, timeout time.Duration) *deadlineCtx {
	c := &deadlineCtx{parent: parent}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Now is read under the lock (on the monotonic clock, as Sub compares
	// it), so that deadlines, and the buckets, are appended in order.
	at := time.Now().Add(timeout)
	if n := len(d.pending); n > 0 && at.Sub(d.pending[n-1].at) < deadlineTick {
		c.b = d.pending[n-1]
		return c
	}
	c.b = &deadlineBucket{d: d, at: at, done: make(chan struct{})}
	d.pending = append(d.pending, c.b)
	if !d.armed {
		d.arm()
	}
	return c
}

// arm sets the timer for the earliest pending bucket. d.mu is held.
func (d *deadlines) arm() {
	wait := time.Until(d.pending[0].at)
	if d.t == nil {
		d.t = time.AfterFunc(wait, d.fire)
	} else {
		d.t.Reset(wait)
	}
	d.armed = true
}

// fire ends every bucket whose time has come and re-arms the timer for the
// next one.
func (d *deadlines) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	i := 0
	for ; i < len(d.pending) && !d.pending[i].at.After(now); i++ {
		b := d.pending[i]
		close(b.done)
		b.ended = true
		for _, f := range b.funcs {
			if f != nil {
				go f()
			}
		}
		b.funcs = nil
		d.pending[i] = nil
	}
	d.pending = d.pending[i:]
	d.armed = false
	if len(d.pending) > 0 {
		d.arm()
	}
}

func nop() {}
