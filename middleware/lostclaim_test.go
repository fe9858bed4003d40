package middleware_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/redisserver"
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

func (s *lostReplyStore) Claim(ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (keystore.Claim, error) {
	c, err := s.Store.Claim(context.WithoutCancel(ctx), key, fp, lease)
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
	c := redis.NewClient(&redis.Options{Addr: redisserver.SharedAddr()})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("Redis at %s: %v", redisserver.SharedAddr(), err)
	}
	var b [8]byte
	rand.Read(b[:])
	prefix := "geoidem-test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if keys, _ := c.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	s, err := redisstore.New(c, redisstore.Config{KeyPrefix: prefix, Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLostClaimReplyIsReleasedPostgres(t *testing.T) {
	lostClaimReply(t, newPGStore(t))
}
