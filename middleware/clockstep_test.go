package middleware_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// steppedStore is a memstore whose clock has been stepped forward by step
// on the store host: every Extend reports a remaining lease step shorter
// than the store granted.
type steppedStore struct {
	*memstore.Store
	step time.Duration
}

func (s *steppedStore) Extend(ctx context.Context, key string, tok keystore.Token, lease time.Duration) (time.Duration, error) {
	remaining, err := s.Store.Extend(ctx, key, tok, lease)
	if err == nil && remaining > 0 {
		remaining -= s.step
	}
	return remaining, err
}

// syncBuffer is a log destination safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A step of the store's clock is detected: when a renewal finds the lease
// the store reports apart from the middleware's own reckoning by more than
// the tolerance, the middleware logs an error and reports the difference
// in the request's Event.ClockStep. A store whose clock runs true (memstore,
// on the same clock) is never reported.
func TestClockStepIsDetected(t *testing.T) {
	for _, step := range []time.Duration{0, 20 * time.Second, -20 * time.Second} {
		t.Run(step.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs syncBuffer
				var ev events
				store := &steppedStore{Store: new(memstore.Store), step: step}
				m := newMiddleware(t, store, middleware.Config{Observer: ev.observe, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					time.Sleep(middleware.DefaultLease) // three renewals
					w.WriteHeader(http.StatusCreated)
				}))
				if w := serve(h, post("k1", feature)); w.Code != http.StatusCreated {
					t.Fatalf("%d, want 201", w.Code)
				}
				got := ev.all[0].ClockStep
				stepped := strings.Contains(logs.String(), "level=ERROR") && strings.Contains(logs.String(), "clock")
				if step == 0 {
					if got != 0 || stepped {
						t.Fatalf("true clock: ClockStep %v, logs:\n%s\nwant 0 and no error", got, logs.String())
					}
					return
				}
				if got != -step || !stepped {
					t.Fatalf("store clock stepped by %v: ClockStep %v, logs:\n%s\nwant %v and an error logged", step, got, logs.String(), -step)
				}
			})
		})
	}
}

// Each store in this module reports, on Extend, the lease it found
// remaining, by its own clock: about the lease it granted less the time
// since. (The conformance suite's ExtendReportsRemainingLease holds every
// store to it; this keeps the three side by side.)
func TestStoresReportRemainingLease(t *testing.T) {
	for name, store := range map[string]keystore.Store{
		"memstore": new(memstore.Store),
		"redis":    newRedisStore(t),
		"postgres": newPGStore(t),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, err := testkit.Claim(ctx, store, "k-"+name, keystore.Fingerprint{}, time.Minute)
			if err != nil || !c.Acquired {
				t.Fatalf("claim: %+v, %v", c, err)
			}
			reported, err := store.Extend(ctx, "k-"+name, c.Token, time.Minute)
			if err != nil {
				t.Fatalf("extend: %v", err)
			}
			// The claim was a moment ago: a whole minute at most, and more
			// than 30 s however loaded the machine.
			if reported <= 30*time.Second || reported > time.Minute {
				t.Fatalf("reported remaining lease %v, want about a minute", reported)
			}
		})
	}
}
