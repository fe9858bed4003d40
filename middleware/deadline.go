// A sharedDeadline bounds many calls by one timeout with one timer: the
// store calls of a geoidem middleware, which all get the same timeout, so
// that a call's bound costs one small context instead of
// context.WithTimeout's timer, context and closure.
//
// Deadlines of calls made in order with one timeout arrive in order: a call
// whose deadline falls within a tick of the latest bucket's joins that
// bucket, else it starts one, and one timer closes each bucket's Done
// channel at the bucket's time. A call is so bounded by at most its
// timeout, and at least a tick less; Deadline reports the bucket's time,
// when Done closes (or, as for any context, a little before: a timer fires
// late, never early).

package middleware

import (
	"context"
	"sync"
	"time"
)

// deadlineTick is the width of a bucket: how much earlier than its timeout, at
// most, a context from sharedDeadline.Bound ends. Timeouts shorter than minSharedTimeout
// are not worth sharing: use context.WithTimeout for them.
const (
	deadlineTick     = time.Millisecond
	minSharedTimeout = 10 * deadlineTick
)

// sharedDeadline hands out contexts that end a timeout after they were made, on
// one timer. The zero value is ready to use. The timeouts given to one
// sharedDeadline should be equal (or rarely change): a context whose deadline falls
// before the latest bucket's starts a bucket of its own, out of order, and
// ends late, with the bucket before it.
type sharedDeadline struct {
	mu      sync.Mutex
	pending []*deadlineBucket // by at, earliest first
	t       *time.Timer
	armed   bool // t will fire for pending[0]
}

type deadlineBucket struct {
	s     *sharedDeadline
	at    time.Time // the deadline of every context in the deadlineBucket
	done  chan struct{}
	funcs []func() // AfterFunc's, nil once stopped (slots are not reused); guarded by s.mu
	ended bool     // done is closed; guarded by s.mu
}

// ctx is a context from sharedDeadline.Bound: the values of its parent, and the
// deadline of its bucket.
type boundContext struct {
	parent context.Context // for its values only
	b      *deadlineBucket
}

// Bound returns a context with parent's values (every one: Value asks
// parent) that ends timeout from now, or at most a deadlineTick earlier, with
// context.DeadlineExceeded. It does not end with parent: give it a parent
// without cancellation (context.WithoutCancel), whose context.Cause is
// then the context's own. timeout must be at least minSharedTimeout. The context
// needs no cancel: it holds nothing once its bucket has ended.
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

// bucket returns the bucket of a context that ends timeout from now.
func (s *sharedDeadline) deadlineBucket(timeout time.Duration) *deadlineBucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Now is read under the lock (on the monotonic clock, as Sub compares
	// it), so that deadlines, and the buckets, are appended in order.
	at := time.Now().Add(timeout)
	if n := len(s.pending); n > 0 && at.Sub(s.pending[n-1].at) < deadlineTick && !at.Before(s.pending[n-1].at) {
		return s.pending[n-1]
	}
	b := &deadlineBucket{s: s, at: at, done: make(chan struct{})}
	s.insert(b)
	return b
}

// insert adds b to pending in order of time, and arms the timer if b is
// now the earliest. s.mu is held.
func (s *sharedDeadline) insert(b *deadlineBucket) {
	i := len(s.pending)
	for i > 0 && b.at.Before(s.pending[i-1].at) {
		i--
	}
	s.pending = append(s.pending, nil)
	copy(s.pending[i+1:], s.pending[i:])
	s.pending[i] = b
	if i == 0 || !s.armed {
		s.arm()
	}
}

// arm sets the timer for the earliest pending bucket. s.mu is held.
func (s *sharedDeadline) arm() {
	wait := time.Until(s.pending[0].at)
	if s.t == nil {
		s.t = time.AfterFunc(wait, s.fire)
	} else {
		s.t.Reset(wait)
	}
	s.armed = true
}

// fire ends every bucket whose time has come and re-arms the timer for the
// next one.
func (s *sharedDeadline) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	i := 0
	for ; i < len(s.pending) && !s.pending[i].at.After(now); i++ {
		b := s.pending[i]
		close(b.done)
		b.ended = true
		for _, f := range b.funcs {
			if f != nil {
				go f()
			}
		}
		b.funcs = nil
		s.pending[i] = nil
	}
	s.pending = s.pending[i:]
	s.armed = false
	if len(s.pending) > 0 {
		s.arm()
	}
}

func (c *boundContext) Deadline() (time.Time, bool) { return c.b.at, true }
func (c *boundContext) Done() <-chan struct{}       { return c.b.done }

func (c *boundContext) Err() error {
	select {
	case <-c.b.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *boundContext) Value(key any) any { return c.parent.Value(key) }

func (c *boundContext) String() string { return "deadline.sharedDeadline.Bound" }

// AfterFunc runs f in a goroutine of its own once c has ended, as
// context.AfterFunc does; having it, c is one to which context.AfterFunc
// (pgx watches every query's context so) and context.WithCancel hook
// without starting a goroutine of their own.
func (c *boundContext) AfterFunc(f func()) (stop func() bool) {
	b := c.b
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.ended {
		go f()
		return func() bool { return false }
	}
	i := len(b.funcs)
	b.funcs = append(b.funcs, f)
	return func() bool {
		b.s.mu.Lock()
		defer b.s.mu.Unlock()
		if b.ended || b.funcs[i] == nil {
			return false
		}
		b.funcs[i] = nil
		return true
	}
}
