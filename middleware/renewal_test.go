package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// cutStore is a replica's view of a shared memstore while its link to the
// store is cut after the claim: Extend fails with a network error, or
// hangs until its context ends.
type cutStore struct {
	*memstore.Store
	hang    bool
	extends atomic.Int64
}

func (s *cutStore) Extend(ctx context.Context, _ string, _ keystore.Token, _ time.Duration) (time.Duration, error) {
	s.extends.Add(1)
	if s.hang {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return 0, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

// A renewal that fails, whatever the store answers, must stop the handler
// (cancel its context with keystore.ErrLeaseLost) no later than the lease
// counted from the last successful claim or extension: the other replica
// takes the key over when the store's lease (StoreLease, longer) ends, and
// the two must never run at once.
func TestFailedRenewalStopsHandlerBeforeTakeover(t *testing.T) {
	for _, hang := range []bool{false, true} {
		name := map[bool]string{false: "extend errors", true: "extend hangs"}[hang]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const lease = 3 * time.Second
				shared := new(memstore.Store)
				cut := &cutStore{Store: shared, hang: hang}
				a := newMiddleware(t, cut, middleware.Config{Lease: lease, StoreTimeout: 500 * time.Millisecond})
				b := newMiddleware(t, shared, middleware.Config{Lease: lease})

				var running atomic.Int64 // handlers running now, on both replicas
				var overlap atomic.Bool
				var cause error
				var stoppedAfter time.Duration
				start := time.Now()
				slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if running.Add(1) > 1 {
						overlap.Store(true)
					}
					select {
					case <-r.Context().Done():
						cause = context.Cause(r.Context())
						stoppedAfter = time.Since(start)
					case <-time.After(20 * time.Second):
					}
					running.Add(-1)
					w.WriteHeader(http.StatusServiceUnavailable)
				})
				quick := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if running.Add(1) > 1 {
						overlap.Store(true)
					}
					running.Add(-1)
					w.WriteHeader(http.StatusCreated)
				})
				done := make(chan struct{})
				go func() { serve(a.Handler(slow), post("k1", feature)); close(done) }()
				// Replica b retries just after the store's lease: it takes the
				// key over.
				time.Sleep(a.StoreLease() + time.Millisecond)
				if w := serve(b.Handler(quick), post("k1", feature)); w.Code != http.StatusCreated {
					t.Fatalf("takeover on replica b: %d %s", w.Code, w.Body)
				}
				<-done
				if !errors.Is(cause, keystore.ErrLeaseLost) {
					t.Fatalf("handler on the cut-off replica: context cause %v, want keystore.ErrLeaseLost", cause)
				}
				if stoppedAfter > lease {
					t.Errorf("handler canceled %v after the claim, later than the %v lease", stoppedAfter, lease)
				}
				if overlap.Load() {
					t.Error("both replicas ran a handler for one key at once")
				}
				if cut.extends.Load() == 0 {
					t.Error("no renewal was attempted")
				}
			})
		})
	}
}

// A successful renewal moves the middleware's own reckoning of the lease
// on: a handler that runs for many leases is never canceled.
func TestSuccessfulRenewalsKeepHandlerRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMiddleware(t, new(memstore.Store), middleware.Config{Lease: 3 * time.Second, StoreTimeout: 500 * time.Millisecond})
		var err error
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
				err = context.Cause(r.Context())
			case <-time.After(30 * time.Second):
			}
			w.WriteHeader(http.StatusCreated)
		})
		if w := serve(m.Handler(h), post("k1", feature)); w.Code != http.StatusCreated || err != nil {
			t.Fatalf("long handler: %d, context cause %v; want 201 and no cancellation", w.Code, err)
		}
	})
}

// New refuses a StoreTimeout that leaves no room for a renewal inside the
// lease: it must be less than Lease/3. The default fits any lease.
func TestNewRefusesStoreTimeoutWithoutRoomForRenewal(t *testing.T) {
	for _, c := range []struct {
		cfg middleware.Config
		ok  bool
	}{
		{middleware.Config{}, true},
		{middleware.Config{Lease: 3 * time.Second}, true},
		{middleware.Config{Lease: 3 * time.Millisecond}, true},
		{middleware.Config{Lease: 3 * time.Second, StoreTimeout: 999 * time.Millisecond}, true},
		{middleware.Config{Lease: 3 * time.Second, StoreTimeout: time.Second}, false},
		{middleware.Config{StoreTimeout: middleware.DefaultLease}, false},
	} {
		_, err := middleware.New(new(failingStore), c.cfg)
		if (err == nil) != c.ok {
			t.Errorf("New(Lease %v, StoreTimeout %v): error %v, want ok=%v", c.cfg.Lease, c.cfg.StoreTimeout, err, c.ok)
		}
	}
	_ = httptest.NewRecorder
}
