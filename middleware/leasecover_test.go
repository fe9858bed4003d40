package middleware_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/middleware"
)

// A stall shorter than the lease loses no record, wherever it falls
// between two renewals (the promise of the package documentation,
// "When the store fails after the handler ran"). Twenty keys are claimed
// 50 ms apart, so that their last renewal before the stall lies from 50 ms
// to a whole renewal interval (Lease/3) before it; the store then stalls
// for 0.5 to 0.95 of the 3 s lease while every handler answers 201. Once
// the stall and the store's lease have passed, every key is sent again:
// each must be replayed, its handler having run once.
func TestStallShorterThanLeaseRunsNothingTwice(t *testing.T) {
	for _, frac := range []float64{0.5, 0.7, 0.9, 0.95} {
		t.Run(fmt.Sprint(frac), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					keys  = 20
					lease = 3 * time.Second
				)
				stall := time.Duration(frac * float64(lease))
				store := newStallStore()
				var ev events
				m := newMiddleware(t, store, middleware.Config{Lease: lease, StoreTimeout: 200 * time.Millisecond, Observer: ev.observe})
				start := time.Now()
				stallAt := start.Add(2 * time.Second) // after each key's first renewal, before its second
				var mu sync.Mutex
				runs := map[string]int{}
				h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					k := r.Header.Get("Idempotency-Key")
					mu.Lock()
					runs[k]++
					mu.Unlock()
					time.Sleep(time.Until(stallAt.Add(100 * time.Millisecond)))
					w.WriteHeader(http.StatusCreated)
					fmt.Fprintf(w, "created %s", k)
				}))
				go func() {
					time.Sleep(time.Until(stallAt))
					store.stall(stall)
				}()
				var wg sync.WaitGroup
				for i := range keys {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * 50 * time.Millisecond)
						if w := serve(h, post(fmt.Sprintf("k%d", i+1), feature)); w.Code != http.StatusCreated {
							t.Errorf("k%d: first answer %d, want 201", i+1, w.Code)
						}
					})
				}
				wg.Wait()
				unrecorded := 0
				for _, e := range ev.all {
					if e.Outcome == middleware.StoreError && e.Status == http.StatusCreated {
						unrecorded++
					}
				}
				if unrecorded != keys {
					t.Fatalf("%d of %d records failed within their request (outcomes %v): the stall proves nothing", unrecorded, keys, ev.outcomes())
				}
				time.Sleep(time.Until(stallAt.Add(stall + 2*lease)))
				for i := range keys {
					k := fmt.Sprintf("k%d", i+1)
					w := serve(h, post(k, feature))
					if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
						t.Errorf("%s: the duplicate after the stall was answered %d (replayed %q), want the recorded 201 replayed",
							k, w.Code, w.Header().Get("Idempotent-Replayed"))
					}
				}
				for i := range keys {
					k := fmt.Sprintf("k%d", i+1)
					if runs[k] != 1 {
						t.Errorf("%s: handler ran %d times, want 1", k, runs[k])
					}
				}
				shutdown(t, m)
			})
		})
	}
}
