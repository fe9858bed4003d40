package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// Two replicas share one Redis; replica a's path to it is cut (TCP resets)
// while its handler runs, so its renewals fail with network errors. Replica
// b takes the key over once the lease has expired in Redis. Replica a's
// handler must have been stopped (context canceled, cause
// keystore.ErrLeaseLost) before b's handler starts: never both at once.
func TestCutOffReplicaStopsBeforeTakeoverOnRedis(t *testing.T) {
	for _, mode := range []struct {
		name      string
		breakPath func(*testkit.Cutter)
	}{
		{"Cut", (*testkit.Cutter).Cut},
		{"Stall", (*testkit.Cutter).Stall},
	} {
		t.Run(mode.name, func(t *testing.T) {
			const (
				lease   = 600 * time.Millisecond
				timeout = 100 * time.Millisecond
			)
			proxy, err := testkit.NewCutter(testkit.SharedAddr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { proxy.Close() })
			opts := func(addr string) *redis.Options {
				return &redis.Options{Addr: addr, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
					PoolTimeout: timeout, ContextTimeoutEnabled: true, MaxRetries: -1}
			}
			viaProxy, direct := redis.NewClient(opts(proxy.Addr())), redis.NewClient(opts(testkit.SharedAddr()))
			t.Cleanup(func() { viaProxy.Close(); direct.Close() })
			if err := direct.Ping(t.Context()).Err(); err != nil {
				t.Fatalf("Redis at %s: %v", testkit.SharedAddr(), err)
			}
			prefix := redisPrefix(t)
			storeA, err := redisstore.New(viaProxy, redisstore.Config{KeyPrefix: prefix, Durability: redisstore.AcceptVolatile})
			if err != nil {
				t.Fatal(err)
			}
			storeB, err := redisstore.New(direct, redisstore.Config{KeyPrefix: prefix, Durability: redisstore.AcceptVolatile})
			if err != nil {
				t.Fatal(err)
			}
			cfg := middleware.Config{Lease: lease, StoreTimeout: timeout}
			a, bm := newMiddleware(t, storeA, cfg), newMiddleware(t, storeB, cfg)

			// The handler on a still runs, as far as it can know, until its
			// context is done: b's handler must not start before then.
			var ctxA atomic.Pointer[context.Context]
			var overlap atomic.Bool
			started := make(chan struct{})
			var cause error
			slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				ctxA.Store(&ctx)
				close(started)
				select {
				case <-ctx.Done():
					cause = context.Cause(ctx)
				case <-time.After(5 * time.Second):
				}
				w.WriteHeader(http.StatusCreated)
			})
			var ranB atomic.Int32
			quick := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ranB.Add(1)
				if (*ctxA.Load()).Err() == nil {
					overlap.Store(true)
				}
				w.WriteHeader(http.StatusCreated)
			})
			done := make(chan struct{})
			go func() { serve(a.Handler(slow), post("k1", feature)); close(done) }()
			<-started
			mode.breakPath(proxy)

			// b's own store calls are bounded by the same short StoreTimeout:
			// on a loaded machine one of them can take longer and b answers
			// 503 store-unavailable without running its handler. That is b
			// keeping the contract, not a takeover; b tries again.
			deadline := time.Now().Add(10 * time.Second)
			slowB := 0
			for {
				w := serve(bm.Handler(quick), post("k1", feature))
				if w.Code == http.StatusCreated {
					break
				}
				storeDown := w.Code == http.StatusServiceUnavailable && strings.Contains(w.Body.String(), middleware.ProblemStoreDown)
				if storeDown {
					slowB++
				}
				if w.Code != http.StatusConflict && !storeDown || time.Now().After(deadline) {
					t.Fatalf("replica b: %d %s, want 409 (or 503 store-unavailable) until the lease expires, then 201", w.Code, w.Body)
				}
				time.Sleep(10 * time.Millisecond) // Redis's clock decides when the lease ends
			}
			<-done
			if n := ranB.Load(); n != 1 {
				t.Errorf("replica b ran its handler %d times, want once (%d answers were 503 store-unavailable)", n, slowB)
			}
			if overlap.Load() {
				t.Error("replica b ran its handler while replica a's context was not yet done")
			}
			if !errors.Is(cause, keystore.ErrLeaseLost) {
				t.Errorf("replica a's handler: context cause %v, want keystore.ErrLeaseLost", cause)
			}
		})
	}
}
