package middleware

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type valueKey struct{}

// TestBoundDeadlines makes contexts at irregular moments on one sharedDeadline (a
// fake clock: synctest) and checks each against the context contract and
// Bound's promise: it reports its exact deadline, carries its parent's
// values but not its cancellation (given a parent without one, as Bound
// asks: the request's context detached by context.WithoutCancel, whose
// origin is canceled meanwhile), and ends at its deadline, at most a tick
// before the timeout has passed, when Err and context.Cause turn to
// DeadlineExceeded. Every other context is made by BoundIn, which keeps
// the same promise.
func TestBoundDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d sharedDeadline
		origin, cancel := context.WithCancelCause(context.WithValue(context.Background(), valueKey{}, "v"))
		defer cancel(nil)
		parent := context.WithoutCancel(origin)
		const timeout = 100 * time.Millisecond
		var wg sync.WaitGroup
		rooms := make([]deadlineRoom, 60)
		for i := range 60 {
			c := d.Bound(parent, timeout)
			if i%2 == 1 { // every other one made in a room: the same contract
				c = d.BoundIn(&rooms[i], parent, timeout)
			}
			made := time.Now()
			dl, ok := c.Deadline()
			if early := made.Add(timeout).Sub(dl); !ok || early < 0 || early >= deadlineTick {
				t.Fatalf("context %d: Deadline() = %v, %v; want at most a tick before %v", i, dl, ok, made.Add(timeout))
			}
			if got := c.Value(valueKey{}); got != "v" {
				t.Fatalf("context %d: the parent's value is %v", i, got)
			}
			wg.Go(func() {
				<-c.Done()
				if ended := time.Now(); !ended.Equal(dl) {
					t.Errorf("context %d ended at %v, its deadline is %v", i, ended, dl)
				}
				if err := c.Err(); err != context.DeadlineExceeded {
					t.Errorf("context %d: Err() = %v after Done", i, err)
				}
				if err := context.Cause(c); err != context.DeadlineExceeded {
					t.Errorf("context %d: context.Cause = %v after Done", i, err)
				}
			})
			if i == 30 {
				cancel(errors.New("the client left"))
			}
			if err := c.Err(); err != nil {
				t.Fatalf("context %d: Err() = %v before its deadline (origin canceled: %v)", i, err, origin.Err() != nil)
			}
			if err := context.Cause(c); err != nil {
				t.Fatalf("context %d: context.Cause = %v before its deadline", i, err)
			}
			time.Sleep(time.Duration(i%7) * 700 * time.Microsecond)
		}
		wg.Wait()
	})
}

// TestBoundConcurrent makes contexts from many goroutines at once, with
// three timeouts (out of order), on the real clock (under -race, the
// lock's test): every one ends, and none before its deadline.
func TestBoundConcurrent(t *testing.T) {
	var d sharedDeadline
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c := d.Bound(context.Background(), time.Duration(1+(g+i)%3)*time.Millisecond)
				<-c.Done()
				if dl, _ := c.Deadline(); time.Now().Before(dl) {
					t.Errorf("a context ended before its deadline %v", dl)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestBoundAfterFunc registers functions on the contexts the
// way pgx watches every query's context (context.AfterFunc) and the way
// context.WithCancel follows a parent: they run once the context has
// ended, a stopped one never runs, and registering starts no goroutine
// (the context package starts one per registration on a parent it cannot
// hook into).
func TestBoundAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d sharedDeadline
		const timeout = 50 * time.Millisecond
		c := d.Bound(context.Background(), timeout)
		before := runtime.NumGoroutine()
		var ran [100]atomic.Bool
		stops := make([]func() bool, len(ran))
		for i := range ran {
			stops[i] = context.AfterFunc(c, func() { ran[i].Store(true) })
		}
		child, cancel := context.WithCancel(c)
		defer cancel()
		if n := runtime.NumGoroutine() - before; n > 1 { // the shared timer's, at most
			t.Errorf("registering %d functions and a child started %d goroutines", len(ran), n)
		}
		for i := 0; i < len(ran); i += 2 {
			if !stops[i]() {
				t.Errorf("stop %d before the deadline returned false", i)
			}
		}
		if stops[0]() {
			t.Error("a second stop returned true")
		}
		time.Sleep(timeout)
		synctest.Wait()
		for i := range ran {
			if got, want := ran[i].Load(), i%2 == 1; got != want {
				t.Errorf("function %d ran %v, want %v", i, got, want)
			}
		}
		if child.Err() != context.DeadlineExceeded {
			t.Errorf("the child's Err is %v after its parent ended", child.Err())
		}
		if stops[1]() {
			t.Error("stop after the function ran returned true")
		}
		// A registration on a context that has ended runs at once.
		var late atomic.Bool
		context.AfterFunc(c, func() { late.Store(true) })
		synctest.Wait()
		if !late.Load() {
			t.Error("a function registered after the deadline did not run")
		}
	})
}

// TestBoundShorterAfterLonger: a context with a shorter timeout, made after
// one with a longer timeout, ends at its own deadline, not with the longer
// one's bucket.
func TestBoundShorterAfterLonger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d sharedDeadline
		start := time.Now()
		long := d.Bound(context.Background(), 100*time.Millisecond)
		short := d.Bound(context.Background(), 10*time.Millisecond)
		<-short.Done()
		if got := time.Since(start); got > 10*time.Millisecond {
			t.Errorf("the 10ms context ended after %v", got)
		}
		if long.Err() != nil {
			t.Errorf("the 100ms context ended with the 10ms one")
		}
		<-long.Done()
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("the 100ms context ended after %v", got)
		}
	})
}

// TestBoundInAllocates checks that a context made in a room allocates
// nothing once its bucket exists.
func TestBoundInAllocates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d sharedDeadline
		parent := context.Background()
		var room deadlineRoom
		d.Bound(parent, time.Second) // the deadlineBucket
		if n := testing.AllocsPerRun(100, func() { _ = d.BoundIn(&room, parent, time.Second) }); n != 0 {
			t.Errorf("BoundIn allocates %v times, want 0", n)
		}
		time.Sleep(2 * time.Second) // let the deadlineBucket end, its timer with it
	})
}

// TestBoundAfterFuncAllocates checks what watching a bound context costs,
// as pgx does for every query (context.AfterFunc, then its stop): the
// context package's own two allocations, as on a context.WithTimeout, and
// nothing of the bucket's once the bucket exists. A context that hooked
// AfterFunc itself cost six.
func TestBoundAfterFuncAllocates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d sharedDeadline
		parent := context.WithoutCancel(context.WithValue(context.Background(), valueKey{}, "v"))
		var room deadlineRoom
		c := d.Bound(parent, time.Second) // the bucket, watched once: its children and Done
		context.AfterFunc(c, func() {})()
		n := testing.AllocsPerRun(100, func() {
			c := d.BoundIn(&room, parent, time.Second)
			stop := context.AfterFunc(c, func() {})
			if !stop() {
				t.Fatal("stop before the deadline returned false")
			}
		})
		if n > 2 {
			t.Errorf("watching a bound context allocates %v times, want at most 2", n)
		}
		time.Sleep(2 * time.Second)
	})
}

// TestDetach checks that a context from detach, and an uncanceled one
// (the exchange's), behave as one from context.WithoutCancel: it has its
// parent's values, never ends, and once the parent is canceled with a
// cause, neither it nor a context made from it (WithCancel, AfterFunc, a
// bound claim's in its room) reports that cause or ends; the bound one
// ends at its own deadline, with its own cause.
func TestDetach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin, cancel := context.WithCancelCause(context.WithValue(context.Background(), valueKey{}, "v"))
		defer cancel(nil)
		for _, c := range []struct {
			name string
			ctx  context.Context
		}{{"detach", detach(origin)}, {"uncanceled", &uncanceled{parent: origin}}, {"WithoutCancel", context.WithoutCancel(origin)}} {
			d := c.ctx
			child, stopChild := context.WithCancel(d)
			defer stopChild()
			var ran atomic.Bool
			context.AfterFunc(d, func() { ran.Store(true) })
			var deadlines sharedDeadline
			bound := deadlines.Bound(d, time.Second)
			if dc, ok := d.(*detachedContext); ok {
				bound = deadlines.BoundIn(&dc.claim, d, time.Second)
			}
			cancel(errors.New("the client left"))
			synctest.Wait()
			if d.Value(valueKey{}) != "v" || child.Value(valueKey{}) != "v" || bound.Value(valueKey{}) != "v" {
				t.Errorf("%s: the parent's value is lost", c.name)
			}
			if _, ok := d.Deadline(); ok || d.Done() != nil || d.Err() != nil || context.Cause(d) != nil {
				t.Errorf("%s: the parent's cancellation shows: Err %v, Cause %v", c.name, d.Err(), context.Cause(d))
			}
			if child.Err() != nil || context.Cause(child) != nil || ran.Load() {
				t.Errorf("%s: a context made from it followed the parent: Err %v, Cause %v, AfterFunc ran %v", c.name, child.Err(), context.Cause(child), ran.Load())
			}
			if bound.Err() != nil || context.Cause(bound) != nil {
				t.Errorf("%s: a bound context followed the parent: Err %v, Cause %v", c.name, bound.Err(), context.Cause(bound))
			}
			<-bound.Done()
			if bound.Err() != context.DeadlineExceeded || context.Cause(bound) != context.DeadlineExceeded {
				t.Errorf("%s: a bound context ended with %v, cause %v", c.name, bound.Err(), context.Cause(bound))
			}
		}
	})
}
