package redisstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// The middleware in front of redisstore: what one HTTP request costs in
// Redis commands, and what clients see when Redis goes away and comes back.

const feature = `{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{}}`

// ingest is the handler of these tests: it reads the body and answers 201.
var ingest = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"stored":["f1"],"bytes":`+strconv.Itoa(len(body))+`}`)
})

func newMiddleware(t testing.TB, store keystore.Store, cfg middleware.Config) *middleware.Middleware {
	t.Helper()
	m, err := middleware.New(store, cfg)
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return m
}

func post(h http.Handler, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(feature))
	r.Header.Set("Idempotency-Key", key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// One HTTP first call costs 2 Redis commands (claim, complete) and one
// replay costs 1.
func middlewareRoundTrips(t *testing.T, s *redisstore.Store, h *commandCounter) {
	t.Helper()
	warmScripts(t, s)
	handler := newMiddleware(t, s, middleware.Config{}).Handler(ingest)
	for i := range 10 {
		key := fmt.Sprintf("key-%d-%s", i, randomPrefix(t))
		expectRoundTrips(t, h, "HTTP first call", []string{claimTrip, "evalsha"}, func() error {
			if w := post(handler, key); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
				return fmt.Errorf("first call answered %d %v", w.Code, w.Header())
			}
			return nil
		})
		expectRoundTrips(t, h, "HTTP replay", []string{claimTrip}, func() error {
			if w := post(handler, key); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
				return fmt.Errorf("replay answered %d %v", w.Code, w.Header())
			}
			return nil
		})
	}
}

func TestMiddlewareRoundTrips(t *testing.T) {
	t.Parallel()
	direct := standaloneClient(t)
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr})
	t.Cleanup(func() { client.Close() })
	h := new(commandCounter)
	client.AddHook(h)
	middlewareRoundTrips(t, newStore(t, client, direct, redisstore.Config{}), h)
}

func TestMiddlewareRoundTripsCluster(t *testing.T) {
	t.Parallel()
	client := clusterClient(t)
	h := new(commandCounter)
	client.AddHook(h)
	middlewareRoundTrips(t, newStore(t, client, client, redisstore.Config{}), h)
}

// executions counts handler runs per key, and checks that each run holds a
// live claim in Redis, read directly (not through the broken path).
type executions struct {
	t      *testing.T
	direct *redis.Client
	store  *redisstore.Store
	delay  time.Duration

	mu   sync.Mutex
	runs map[string]int
}

func (e *executions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	e.mu.Lock()
	e.runs[key]++
	e.mu.Unlock()
	hold, ok := middleware.HoldFromContext(r.Context())
	if !ok {
		e.t.Errorf("handler for %s ran without a hold", key)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, err := e.direct.Get(ctx, e.store.RedisKey(hold.Key)).Bytes()
		cancel()
		var tok [8]byte
		binary.BigEndian.PutUint64(tok[:], uint64(hold.Token))
		if err != nil || len(v) < 41 || v[0] != 'i' || !bytes.Equal(v[33:41], tok[:]) {
			e.t.Errorf("handler for %s ran without a claim in Redis holding its token: %q, %v", key, v, err)
		}
	}
	time.Sleep(e.delay) // stay in flight while Redis goes away
	ingest(w, r)
}

// With requests in flight, Redis goes away (cut or stalled) and comes back.
// Every answer while it is away is 503 with Retry-After, within a bound of
// the client timeouts; no handler runs without a claim; once Redis is back
// the retried requests succeed; and no key executes twice.
func TestMiddlewareOutage(t *testing.T) {
	t.Parallel()
	direct := standaloneClient(t)
	for _, mode := range []struct {
		name      string
		breakPath func(*testkit.Cutter)
	}{
		{"Cut", (*testkit.Cutter).Cut},
		{"Stall", (*testkit.Cutter).Stall},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			proxy := newTCPProxy(t, standaloneAddr)
			store := newStore(t, outageClient(t, proxy.Addr()), direct, redisstore.Config{})
			exec := &executions{t: t, direct: direct, store: store, delay: 30 * time.Millisecond, runs: map[string]int{}}
			mw := newMiddleware(t, store, middleware.Config{
				StoreTimeout: outageTimeout,
				// Short enough that a claim made by a command whose reply
				// the outage swallowed stops blocking its key soon after.
				Lease: 2 * time.Second,
			})
			srv := httptest.NewServer(mw.Handler(exec))
			t.Cleanup(srv.Close)
			httpClient := srv.Client()
			httpClient.Timeout = 30 * time.Second

			const senders, keysEach = 8, 30
			var (
				wg         sync.WaitGroup
				outageSeen atomic.Int64 // 503 answers
				inFlight   atomic.Int64 // 409 answers
				succeeded  atomic.Int64
				slowest503 atomic.Int64 // nanoseconds
				stop       = time.Now().Add(60 * time.Second)
			)
			prefix := randomPrefix(t)
			for i := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range keysEach {
						key := fmt.Sprintf("%s%d-%d", prefix, i, j)
						for attempt := 0; ; attempt++ {
							if time.Now().After(stop) {
								t.Errorf("key %s: no success after 60s and %d attempts", key, attempt)
								return
							}
							req, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
							req.Header.Set("Idempotency-Key", key)
							start := time.Now()
							resp, err := httpClient.Do(req)
							elapsed := time.Since(start)
							if err != nil {
								t.Errorf("key %s: %v", key, err)
								return
							}
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							switch resp.StatusCode {
							case http.StatusCreated:
								succeeded.Add(1)
							case http.StatusServiceUnavailable:
								outageSeen.Add(1)
								for old := slowest503.Load(); int64(elapsed) > old && !slowest503.CompareAndSwap(old, int64(elapsed)); old = slowest503.Load() {
								}
								if resp.Header.Get("Retry-After") == "" {
									t.Errorf("key %s: 503 without Retry-After", key)
								}
								// The claim and, for a request in flight, the
								// handler's own time come before the answer.
								if elapsed > outageBound+exec.delay {
									t.Errorf("key %s: 503 after %v, more than %v", key, elapsed, outageBound+exec.delay)
								}
							case http.StatusConflict:
								inFlight.Add(1)
							default:
								t.Errorf("key %s: unexpected status %d", key, resp.StatusCode)
								return
							}
							if resp.StatusCode == http.StatusCreated {
								break
							}
							time.Sleep(20 * time.Millisecond) // a sender honouring Retry-After would wait longer
						}
					}
				}()
			}

			time.Sleep(150 * time.Millisecond) // requests flowing, some in their handler
			mode.breakPath(proxy)
			time.Sleep(700 * time.Millisecond)
			proxy.Restore()
			wg.Wait()

			if outageSeen.Load() == 0 {
				t.Errorf("no request was answered 503: the outage was not observed")
			}
			if got := succeeded.Load(); got != senders*keysEach {
				t.Errorf("%d of %d keys succeeded", got, senders*keysEach)
			}
			exec.mu.Lock()
			defer exec.mu.Unlock()
			for key, n := range exec.runs {
				if n != 1 {
					t.Errorf("key %s executed %d times", key, n)
				}
			}
			if len(exec.runs) != senders*keysEach {
				t.Errorf("%d keys executed, want %d", len(exec.runs), senders*keysEach)
			}
			t.Logf("%d keys: %d answers 503 (slowest %v), %d answers 409", senders*keysEach, outageSeen.Load(), time.Duration(slowest503.Load()), inFlight.Load())
		})
	}
}
