package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/middleware"
)

// storeRecordsInStall serves n keys at once whose handlers answer 201 just
// after the store began to stall for stall (when the last of them started):
// none of their records is written within its request.
func storeRecordsInStall(t *testing.T, m *middleware.Middleware, store *stallStore, n int, stall time.Duration) {
	t.Helper()
	var started atomic.Int64
	stalled := make(chan struct{})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if started.Add(1) == int64(n) {
			store.stall(stall)
			close(stalled)
		}
		<-stalled
		w.WriteHeader(http.StatusCreated)
	}))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if w := serve(h, post(fmt.Sprint("k", i), feature)); w.Code != http.StatusCreated {
				t.Errorf("k%d: %d, want 201", i, w.Code)
			}
		})
	}
	wg.Wait()
}

// A record given up in the background (its lease may have ended during a
// stall longer than the lease) is a record lost: Shutdown, though it has
// nothing left to wait for, says how many were given up, so that a process
// can tell its operator and exit non-zero.
func TestShutdownNamesRecordsGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newStallStore()
		m := newMiddleware(t, store, middleware.Config{Lease: 9 * time.Second, StoreTimeout: 200 * time.Millisecond})
		storeRecordsInStall(t, m, store, 14, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := m.Shutdown(ctx)
		var se *middleware.ShutdownError
		if !errors.As(err, &se) || se.Records != 14 || se.Releases != 0 || se.Pending != 0 {
			t.Fatalf("Shutdown = %v, want a *ShutdownError naming 14 records given up, none pending", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v: its context did not end", err)
		}
		t.Logf("Shutdown: %v", err)
	})
}

// A Shutdown whose context ends in a stall gives up the work still pending
// and names it: how many, and of which kind.
func TestShutdownInStallNamesPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newStallStore()
		m := newMiddleware(t, store, middleware.Config{StoreTimeout: 200 * time.Millisecond})
		storeRecordsInStall(t, m, store, 3, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := m.Shutdown(ctx)
		var se *middleware.ShutdownError
		if !errors.As(err, &se) || se.Pending != 3 || se.Records != 3 || se.Releases != 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want a *ShutdownError naming 3 records pending and given up, wrapping context.DeadlineExceeded", err)
		}
		t.Logf("Shutdown: %v", err)
	})
}
