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

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// stallStore is a networked store that stalls: from stall(d) on, every
// operation, whenever it was sent, waits until the stall ends, unless its
// context ends first; it then fails with the context's error and changes
// nothing. It is not memstore, so the middleware bounds its calls by
// Config.StoreTimeout.
type stallStore struct {
	inner keystore.Store

	mu    sync.Mutex
	until time.Time

	failed atomic.Int64 // operations that failed in a stall
}

func newStallStore() *stallStore { return &stallStore{inner: new(memstore.Store)} }

func (s *stallStore) stall(d time.Duration) {
	s.mu.Lock()
	s.until = time.Now().Add(d)
	s.mu.Unlock()
}

func (s *stallStore) wait(ctx context.Context) error {
	s.mu.Lock()
	d := time.Until(s.until)
	s.mu.Unlock()
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		s.failed.Add(1)
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *stallStore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	if err := s.wait(ctx); err != nil {
		return keystore.Claim{}, err
	}
	return s.inner.Claim(ctx, key, a)
}

func (s *stallStore) Extend(ctx context.Context, key string, tok keystore.Token, lease time.Duration) (time.Duration, error) {
	if err := s.wait(ctx); err != nil {
		return 0, err
	}
	return s.inner.Extend(ctx, key, tok, lease)
}

func (s *stallStore) Complete(ctx context.Context, key string, tok keystore.Token, rec []byte, ret time.Duration) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.inner.Complete(ctx, key, tok, rec, ret)
}

func (s *stallStore) Release(ctx context.Context, key string, tok keystore.Token) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.inner.Release(ctx, key, tok)
}

// A store that stalls while handlers finish must not lose their records:
// the middleware keeps trying in the background, so every duplicate sent
// after the stall, even after the lease, is a replay. Twenty keys arrive
// 100 ms apart, each handler works 300 ms, and the store stalls for 1, 3
// or 10 s from the moment the fifth handler starts: the handlers running
// then cannot record within the request (the store timeout is 200 ms).
// Every key is sent again once the stall and a whole lease have passed,
// and must have run its handler exactly once.
func TestStoreStallLosesNoRecord(t *testing.T) {
	for _, stall := range []time.Duration{time.Second, 3 * time.Second, 10 * time.Second} {
		t.Run(fmt.Sprint(stall), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const keys = 20
				store := newStallStore()
				var ev events
				m := newMiddleware(t, store, middleware.Config{StoreTimeout: 200 * time.Millisecond, Observer: ev.observe})
				var mu sync.Mutex
				var once sync.Once
				runs := map[string]int{}
				h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					k := r.Header.Get("Idempotency-Key")
					mu.Lock()
					runs[k]++
					mu.Unlock()
					if k == "k5" {
						once.Do(func() { store.stall(stall) })
					}
					time.Sleep(300 * time.Millisecond)
					w.WriteHeader(http.StatusCreated)
					fmt.Fprintf(w, "created %s", k)
				}))

				first := make([]int, keys)
				var wg sync.WaitGroup
				for i := range keys {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * 100 * time.Millisecond)
						first[i] = serve(h, post(fmt.Sprintf("k%d", i+1), feature)).Code
					})
				}
				wg.Wait()
				unrecorded := 0
				for _, e := range ev.all {
					if e.Outcome == middleware.StoreError && e.Status == http.StatusCreated {
						unrecorded++
					}
				}
				if unrecorded == 0 {
					t.Fatalf("no handler's record failed within its request (outcomes %v): the stall proves nothing", ev.outcomes())
				}

				time.Sleep(stall + middleware.DefaultLease + time.Second)
				for i := range keys {
					k := fmt.Sprintf("k%d", i+1)
					w := serve(h, post(k, feature))
					if w.Code != http.StatusCreated {
						t.Errorf("%s: the duplicate after the stall was answered %d, want 201", k, w.Code)
					}
					ranBefore := first[i] == http.StatusCreated
					if ranBefore && (w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true") {
						t.Errorf("%s: the duplicate after the stall was answered %d (replayed %q), want the recorded 201 replayed",
							k, w.Code, w.Header().Get("Idempotent-Replayed"))
					}
				}
				for i := range keys {
					k := fmt.Sprintf("k%d", i+1)
					if runs[k] != 1 {
						t.Errorf("%s: handler ran %d times, want 1 (first answer %d)", k, runs[k], first[i])
					}
				}
				t.Logf("%d of %d records failed within their request; %d store operations failed in the stall", unrecorded, keys, store.failed.Load())
				shutdown(t, m)
			})
		})
	}
}

// A release that fails in a stall (the handler answered 503) is retried in
// the background: a retry sent once the stall is over runs the handler
// again at once, instead of meeting 409 for the rest of the lease.
func TestStoreStallReleaseIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newStallStore()
		m := newMiddleware(t, store, middleware.Config{StoreTimeout: 200 * time.Millisecond})
		var runs atomic.Int64
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				store.stall(3 * time.Second)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		if w := serve(h, post("k1", feature)); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("first answer %d, want the handler's 503", w.Code)
		}
		time.Sleep(5 * time.Second) // the stall is over; the lease (30 s) is not
		if w := serve(h, post("k1", feature)); w.Code != http.StatusCreated {
			t.Fatalf("retry after the stall: %d %s, want 201 (the released key runs again)", w.Code, w.Body)
		}
		if runs.Load() != 2 {
			t.Fatalf("handler ran %d times, want 2", runs.Load())
		}
		shutdown(t, m)
	})
}

// shutdown waits for the middleware's background work.
func shutdown(t *testing.T, m *middleware.Middleware) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// Shutdown waits for a record retried in the background: called during a
// 3 s stall, it returns nil once the stall is over and the record written
// (within one backoff pause, 2 s at most),
// and the key is replayed afterwards. With a deadline inside a 10 s stall
// it gives up, with an error wrapping context.DeadlineExceeded, and returns
// at its deadline.
func TestShutdownWaitsForBackgroundWork(t *testing.T) {
	for _, tc := range []struct {
		stall, wait time.Duration
		wantErr     bool
	}{
		{3 * time.Second, 10 * time.Second, false},
		{10 * time.Second, time.Second, true},
	} {
		t.Run(fmt.Sprint(tc.stall), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newStallStore()
				m := newMiddleware(t, store, middleware.Config{StoreTimeout: 200 * time.Millisecond})
				h := newCounter()
				stalling := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					store.stall(tc.stall)
					h.ServeHTTP(w, r)
				}))
				if w := serve(stalling, post("k1", feature)); w.Code != http.StatusCreated {
					t.Fatalf("first answer %d, want 201", w.Code)
				}
				ctx, cancel := context.WithTimeout(context.Background(), tc.wait)
				defer cancel()
				start := time.Now()
				err := m.Shutdown(ctx)
				took := time.Since(start)
				if !tc.wantErr {
					// The background retries at most 2 s apart, each bounded by
					// the 200 ms store timeout.
					if err != nil || took < tc.stall || took > tc.stall+2200*time.Millisecond {
						t.Fatalf("Shutdown = %v after %v, want nil within 2.2s of the end of the %v stall", err, took, tc.stall)
					}
					w := serve(m.Handler(h), post("k1", feature))
					if w.Header().Get("Idempotent-Replayed") != "true" || h.total.Load() != 1 {
						t.Fatalf("after Shutdown: %d replayed %q, handler runs %d; want the record replayed",
							w.Code, w.Header().Get("Idempotent-Replayed"), h.total.Load())
					}
					return
				}
				if !errors.Is(err, context.DeadlineExceeded) || took != tc.wait {
					t.Fatalf("Shutdown = %v after %v, want context.DeadlineExceeded at %v", err, took, tc.wait)
				}
				t.Logf("Shutdown: %v", err)
			})
		})
	}
}

// noReleaseStore is a memstore whose Release always fails, as when the
// connection breaks after a handler's 5xx: the key stays in flight, with
// nobody renewing it, until its lease ends.
type noReleaseStore struct{ *memstore.Store }

func (noReleaseStore) Release(context.Context, string, keystore.Token) error {
	return errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
}

// A 409's Retry-After reflects what the store knows: the holder's remaining
// lease, capped at Lease/6 (5 s by default) and never below
// Config.RetryAfter. A key whose holder is gone (a release that failed, a
// crashed process) is free when the store's lease (StoreLease, 47 s by
// default) ends: a sender told so waits about that long instead of polling
// every second.
func TestInFlightRetryAfterFollowsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMiddleware(t, noReleaseStore{new(memstore.Store)}, middleware.Config{})
		if m.StoreLease() != 47*time.Second {
			t.Fatalf("StoreLease() = %v with the defaults, want 47s (Lease + Lease/2 + StoreTimeout)", m.StoreLease())
		}
		var runs atomic.Int64
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		start := time.Now()
		if w := serve(h, post("k1", feature)); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("first answer %d, want the handler's 503", w.Code)
		}
		for _, step := range []struct {
			at   time.Duration
			want string
		}{
			{0, "5"}, // 47 s left: capped at Lease/6
			{m.StoreLease() - 2500*time.Millisecond, "3"}, // 2.5 s left, rounded up
			{m.StoreLease() - 200*time.Millisecond, "1"},  // 0.2 s left: Config.RetryAfter at least
		} {
			time.Sleep(time.Until(start.Add(step.at)))
			w := serve(h, post("k1", feature))
			wantProblem(t, w, http.StatusConflict, middleware.ProblemInFlight)
			if got := w.Header().Get("Retry-After"); got != step.want {
				t.Errorf("%v after the claim: 409 Retry-After = %q, want %q", step.at, got, step.want)
			}
		}
		time.Sleep(time.Until(start.Add(m.StoreLease() + time.Millisecond)))
		if w := serve(h, post("k1", feature)); w.Code != http.StatusCreated {
			t.Fatalf("after the store's lease: %d, want 201", w.Code)
		}
		// The release was never written: Shutdown says so.
		var se *middleware.ShutdownError
		if err := m.Shutdown(context.Background()); !errors.As(err, &se) || se.Releases != 1 || se.Records != 0 || se.Pending != 0 {
			t.Errorf("Shutdown = %v, want a *ShutdownError naming the one release given up", err)
		}
	})
}

// The background work is bounded: a store that keeps refusing records
// (while claims succeed) cannot make the middleware hold more than
// MaxBackground records at once; beyond them, a failed record is not
// retried (it is given up at once), and the key stays in flight until its
// lease ends. Shutdown names both: the MaxBackground pending, and those
// given up with them.
func TestBackgroundWorkIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := refusingStore{memstore.New(memstore.Config{ReserveBytes: -1})}
		m := newMiddleware(t, store, middleware.Config{})
		h := m.Handler(newCounter())
		for i := range middleware.MaxBackground + 10 {
			if w := serve(h, post(fmt.Sprint("k", i), feature)); w.Code != http.StatusCreated {
				t.Fatalf("%d: %d", i, w.Code)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := m.Shutdown(ctx)
		var se *middleware.ShutdownError
		if !errors.As(err, &se) || se.Pending != middleware.MaxBackground || se.Records != middleware.MaxBackground+10 || se.Releases != 0 || !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown = %v; want it to give up on exactly MaxBackground (%d) records pending, MaxBackground+10 in all", err, middleware.MaxBackground)
		}
	})
}

// refusingStore is a memstore whose Complete always fails.
type refusingStore struct{ *memstore.Store }

func (refusingStore) Complete(context.Context, string, keystore.Token, []byte, time.Duration) error {
	return errors.New("network down")
}
