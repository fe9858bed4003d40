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

	"github.com/geoidem/geoidem/keystore"
)

type valueKey struct{}

// TestStoreContextDeadlines makes store-call contexts at irregular moments
// on one deadlines (a fake clock: synctest) and checks each against the
// context contract and the bound's promise: it reports its exact
// deadline, carries its parent's values (and a claim's token) but not its
// cancellation, and ends at its deadline, at most a tick before the
// timeout has passed, when Err and context.Cause turn to DeadlineExceeded.
func TestStoreContextDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d deadlines
		parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), valueKey{}, "v"))
		defer cancel(nil)
		const timeout = 100 * time.Millisecond
		var wg sync.WaitGroup
		for i := range 60 {
			c := d.bound(parent, timeout)
			if i%3 == 0 {
				c.token = keystore.Token(1000 + i)
			}
			made := time.Now()
			dl, ok := c.Deadline()
			if early := made.Add(timeout).Sub(dl); !ok || early < 0 || early >= deadlineTick {
				t.Fatalf("context %d: Deadline() = %v, %v; want at most a tick before %v", i, dl, ok, made.Add(timeout))
			}
			if got := c.Value(valueKey{}); got != "v" {
				t.Fatalf("context %d: the parent's value is %v", i, got)
			}
			tok, ok := keystore.ClaimTokenFromContext(c)
			if want := keystore.Token(1000 + i); (i%3 == 0) != ok || (ok && tok != want) {
				t.Fatalf("context %d: claim token %v, %v", i, tok, ok)
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
				t.Fatalf("context %d: Err() = %v before its deadline (parent canceled: %v)", i, err, parent.Err() != nil)
			}
			if err := context.Cause(c); err != nil {
				t.Fatalf("context %d: context.Cause = %v before its deadline", i, err)
			}
			time.Sleep(time.Duration(i%7) * 700 * time.Microsecond)
		}
		wg.Wait()
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.pending) != 0 || d.armed {
			t.Errorf("after every deadline: %d buckets pending, timer armed %v", len(d.pending), d.armed)
		}
	})
}

// TestStoreContextsConcurrent makes store-call contexts from many
// goroutines at once, on the real clock (under -race, the lock's test):
// every one ends, and none before its deadline.
func TestStoreContextsConcurrent(t *testing.T) {
	var d deadlines
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c := d.bound(context.Background(), time.Duration(1+(g+i)%3)*time.Millisecond)
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

// TestStoreContextAfterFunc registers functions on store-call contexts the
// way pgx watches every query's context (context.AfterFunc) and the way
// context.WithCancel follows a parent: they run once the context has
// ended, a stopped one never runs, and registering starts no goroutine
// (the context package starts one per registration on a parent it cannot
// hook into).
func TestStoreContextAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d deadlines
		const timeout = 50 * time.Millisecond
		c := d.bound(context.Background(), timeout)
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
