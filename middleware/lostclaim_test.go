package middleware_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// lostReplyStore lets its first Claim reach the store and commit there
// (with whatever the caller's context carries, its chosen token included),
// and then loses the reply: it answers only when the caller's context
// ends, with its error, as a network call that timed out.
type lostReplyStore struct {
	keystore.Store
	claims atomic.Int64
}

func (s *lostReplyStore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	c, err := s.Store.Claim(context.WithoutCancel(ctx), key, a)
	if s.claims.Add(1) > 1 {
		return c, err
	}
	<-ctx.Done()
	return keystore.Claim{}, ctx.Err()
}

// lostClaimReply sends a request whose claim commits but whose reply is
// lost: it is answered 503, not executed. The claim that took the key must
// be released in the background, not block every retry with 409 for the
// whole lease the store was asked for (47 s). Shutdown waits for that
// background release, so the test waits for it there, a condition rather
// than a time; then the retry, through a second middleware on the same
// store, must run the handler.
func lostClaimReply(t *testing.T, inner keystore.Store) {
	t.Helper()
	store := &lostReplyStore{Store: inner}
	var runs atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	m := newMiddleware(t, store, middleware.Config{})
	wantProblem(t, serve(m.Handler(handler), post("k1", feature)), http.StatusServiceUnavailable, middleware.ProblemStoreDown)
	shutdown(t, m)
	retry := newMiddleware(t, store, middleware.Config{})
	last := serve(retry.Handler(handler), post("k1", feature)).Code
	if last != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("retry after the lost claim reply and its background release: last answer %d, handler runs %d; want 201 from one run",
			last, runs.Load())
	}
	shutdown(t, retry)
}

func TestLostClaimReplyIsReleasedMemstore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lostClaimReply(t, new(memstore.Store))
	})
}

func TestLostClaimReplyIsReleasedRedis(t *testing.T) {
	lostClaimReply(t, newRedisStore(t))
}

// newRedisStore returns a redisstore.Store on the shared test Redis, under
// a key prefix of its own, failing (never skipping) when it is unreachable.
func newRedisStore(t *testing.T) *redisstore.Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testkit.SharedAddr()})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("Redis at %s: %v", testkit.SharedAddr(), err)
	}
	s, err := redisstore.New(c, redisstore.Config{KeyPrefix: redisPrefix(t), Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// redisPrefix returns a key prefix of the test's own on the shared Redis,
// whose keys are deleted when the test ends.
func redisPrefix(t *testing.T) string {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	prefix := "geoidem-test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c := redis.NewClient(&redis.Options{Addr: testkit.SharedAddr()})
		defer c.Close()
		if err := testkit.DeletePrefix(ctx, c, prefix); err != nil {
			t.Errorf("deleting the keys under %s: %v", prefix, err)
		}
	})
	return prefix
}

func TestLostClaimReplyIsReleasedPostgres(t *testing.T) {
	lostClaimReply(t, newPGStore(t))
}

// newRedisStoreAt returns a redisstore.Store on the Redis reached at addr
// (a proxy in front of the shared test Redis), under a key prefix of its
// own, with the client options docs/stores.md recommends.
func newRedisStoreAt(t *testing.T, addr string) *redisstore.Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, redisstore.Config{KeyPrefix: redisPrefix(t), Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// retryUntilRun sends the request for key again, every 20 ms, until the
// handler runs (201), and fails t if that takes longer than bound: a key
// left in flight by a claim whose outcome was unknown answers 409 for the
// whole store lease instead.
func retryUntilRun(t *testing.T, h http.Handler, key string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		w := serve(h, post(key, feature))
		if w.Code == http.StatusCreated {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %s: still %d %s after %v; the claim whose reply was lost was not released by its token", key, w.Code, w.Body, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Redis claim that Redis applied but whose reply was lost to a
// connection reset fails fast with a network error, not a timeout: the
// middleware answers 503 and must release the key by the claim's token at
// once, so that the sender's retry runs the handler, not 409 for the whole
// store lease (47 s).
func TestRedisClaimReplyResetIsReleased(t *testing.T) {
	cut := newReplyCutter(t, testkit.SharedAddr())
	store := newRedisStoreAt(t, cut.addr())
	m := newMiddleware(t, store, middleware.Config{})
	h := m.Handler(newCounter())
	cut.cut.Store(true)
	wantProblem(t, serve(h, post("k1", feature)), http.StatusServiceUnavailable, middleware.ProblemStoreDown)
	cut.cut.Store(false)
	if cut.cuts.Load() == 0 {
		t.Fatal("no reply was cut: the claim never reached Redis")
	}
	retryUntilRun(t, h, "k1", 10*time.Second)
	shutdown(t, m)
}

// The same reached by a timeout: go-redis fails the read at the context's
// deadline, whatever the context's Err says then; the claim, applied, must
// be released by its token all the same. Eight keys, so that a release
// that depends on the context's state rather than on the call's outcome
// (it missed about one claim in four) fails here.
func TestRedisClaimReplyTimeoutIsReleased(t *testing.T) {
	cut := newReplyCutter(t, testkit.SharedAddr())
	store := newRedisStoreAt(t, cut.addr())
	m := newMiddleware(t, store, middleware.Config{StoreTimeout: 200 * time.Millisecond})
	h := m.Handler(newCounter())
	for i := range 8 {
		key := fmt.Sprint("k", i)
		cut.delay.Store(int64(time.Second))
		wantProblem(t, serve(h, post(key, feature)), http.StatusServiceUnavailable, middleware.ProblemStoreDown)
		cut.delay.Store(0)
		retryUntilRun(t, h, key, 10*time.Second)
	}
	shutdown(t, m)
}

// earlyDeadlineStore lets its first Claim reach the store and apply there,
// then fails it at once with the error a client library returns when the
// read hit the context's deadline, while the context's Err still says
// nil (go-redis sets the socket's deadline from ctx.Deadline(); a shared
// deadline's timer fires a moment later). A release that depends on the
// context's state instead of the call's outcome misses it.
type earlyDeadlineStore struct {
	keystore.Store
	claims atomic.Int64
}

func (s *earlyDeadlineStore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	c, err := s.Store.Claim(ctx, key, a)
	if s.claims.Add(1) > 1 || err != nil {
		return c, err
	}
	return keystore.Claim{}, fmt.Errorf("read tcp 127.0.0.1:50000->127.0.0.1:6379: i/o timeout: %w", os.ErrDeadlineExceeded)
}

// A claim that failed on its deadline while its context still looked alive
// is released by its token as well: the retry runs the handler at once.
func TestClaimFailedAtDeadlineIsReleased(t *testing.T) {
	for name, inner := range map[string]keystore.Store{
		"memstore": new(memstore.Store), "redis": newRedisStore(t), "postgres": newPGStore(t),
	} {
		t.Run(name, func(t *testing.T) {
			store := &earlyDeadlineStore{Store: inner}
			m := newMiddleware(t, store, middleware.Config{})
			h := m.Handler(newCounter())
			wantProblem(t, serve(h, post("k1", feature)), http.StatusServiceUnavailable, middleware.ProblemStoreDown)
			retryUntilRun(t, h, "k1", 10*time.Second)
			shutdown(t, m)
		})
	}
}
