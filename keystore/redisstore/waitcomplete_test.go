package redisstore_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// With WaitReplicas, a Complete whose record no replica acknowledged fails
// with ErrNotReplicated: the middleware must not take it as stored, since
// a failover then promotes a replica that holds the claim in flight, and
// the retry after its lease runs the handler again.
func TestWaitReplicasCompleteFailover(t *testing.T) {
	t.Parallel()
	client, replica := replicatedPairServers(t)
	ctx := t.Context()
	prefix := randomPrefix(t)
	cfg := redisstore.Config{KeyPrefix: prefix, WaitReplicas: 1, WaitTimeout: 2 * time.Second}
	s := newStore(t, client, client, cfg)
	other := newStore(t, client, client, cfg) // completes claims it did not make
	own, generic := keystoretest.Key(t), keystoretest.Key(t)
	ownClaim, err := newClaim(ctx, s, own, keystore.Fingerprint{1}, time.Minute)
	if err != nil || !ownClaim.Acquired {
		t.Fatalf("Claim: %v %v", ownClaim.State, err)
	}
	genericClaim, err := newClaim(ctx, s, generic, keystore.Fingerprint{2}, time.Minute)
	if err != nil || !genericClaim.Acquired {
		t.Fatalf("Claim: %v %v", genericClaim.State, err)
	}

	// The failover: the replica, which acknowledged both claims, is
	// promoted; the old master writes what follows for nobody.
	promoted := redis.NewClient(&redis.Options{Addr: replica.addr})
	t.Cleanup(func() { promoted.Close() })
	if err := promoted.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}

	rec := encode(record.Record{StatusCode: 201})
	if err := s.Complete(ctx, own, ownClaim.Token, rec, time.Hour); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Errorf("Complete of the store's own claim, no replica acknowledging: %v; want ErrNotReplicated", err)
	}
	if err := other.Complete(ctx, generic, genericClaim.Token, rec, time.Hour); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Errorf("Complete of another store's claim, no replica acknowledging: %v; want ErrNotReplicated", err)
	}

	// The records are on the old master only: the promoted replica holds
	// both claims in flight. The middleware, told the Complete failed,
	// retries it; against the promoted replica, the claim's token still
	// holds the key, and the record is stored there.
	after := newStore(t, promoted, promoted, redisstore.Config{KeyPrefix: prefix})
	for _, k := range []struct {
		key string
		c   claimed
	}{{own, ownClaim}, {generic, genericClaim}} {
		c, err := newClaim(ctx, after, k.key, k.c.Fingerprint, time.Minute)
		if err != nil || c.State != keystore.InFlight || c.Acquired {
			t.Fatalf("Claim on the promoted replica: %v (acquired %v), %v; want in flight", c.State, c.Acquired, err)
		}
		if err := after.Complete(ctx, k.key, k.c.Token, rec, time.Hour); err != nil {
			t.Fatalf("Complete retried on the promoted replica: %v", err)
		}
		if c, err := newClaim(ctx, after, k.key, k.c.Fingerprint, time.Minute); err != nil || c.State != keystore.Completed {
			t.Fatalf("Claim after the retried Complete: %v %v; want a replay", c.State, err)
		}
	}
}

// A Complete repeated after one that failed with ErrNotReplicated waits for
// the replicas again, from any connection: the record is already on the
// master, so the repeated Complete changes nothing, but it must not report
// success until a replica has the record. On Valkey (8.0) a connection
// whose commands wrote nothing has nothing for WAIT to wait for; on Redis
// 7.0, any command moves what WAIT waits for to the master's offset.
func TestWaitReplicasCompleteRepeated(t *testing.T) {
	t.Parallel()
	t.Run("Redis", func(t *testing.T) {
		t.Parallel()
		completeRepeated(t, func(args ...string) *redisServer { return privateServer(t, args...) })
	})
	t.Run("Valkey", func(t *testing.T) {
		t.Parallel()
		completeRepeated(t, func(args ...string) *redisServer {
			return privateValkey(t, testkit.RedisOptions{Args: args})
		})
	})
}

func completeRepeated(t *testing.T, start func(args ...string) *redisServer) {
	client, replica := replicatedPairOf(t, start)
	ctx := t.Context()
	prefix := randomPrefix(t)
	cfg := redisstore.Config{KeyPrefix: prefix, WaitReplicas: 1, WaitTimeout: time.Second}
	s := newStore(t, client, client, cfg)
	key := keystoretest.Key(t)
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}

	// Stall the replica: stopped, it reads nothing from its master and
	// acknowledges nothing.
	rc := redis.NewClient(&redis.Options{Addr: replica.addr})
	t.Cleanup(func() { rc.Close() })
	pid := serverPid(t, rc)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	resume := func() {
		if stopped {
			stopped = false
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume)

	rec := encode(record.Record{StatusCode: 201})
	if err := s.Complete(ctx, key, c.Token, rec, time.Hour); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("Complete, the replica stalled: %v; want ErrNotReplicated", err)
	}
	// Another client, whose connections wrote nothing yet: a WAIT on one
	// of them alone would be satisfied at once.
	fresh := redis.NewClient(&redis.Options{Addr: client.Options().Addr})
	t.Cleanup(func() { fresh.Close() })
	again := newStore(t, fresh, fresh, cfg)
	for i := range 2 { // the first may load the script
		if err := again.Complete(ctx, key, c.Token, rec, time.Hour); !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("Complete repeated (%d), the replica still stalled: %v; want ErrNotReplicated", i+1, err)
		}
	}
	if err := s.Complete(ctx, key, c.Token, rec, time.Hour); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("Complete repeated by the same store, the replica still stalled: %v; want ErrNotReplicated", err)
	}

	resume()
	// The replica catches up: a repeated Complete succeeds once it has
	// acknowledged the record (on a loaded machine, allow a few tries).
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := again.Complete(ctx, key, c.Token, rec, time.Hour)
		if err == nil {
			break
		}
		if !errors.Is(err, redisstore.ErrNotReplicated) || time.Now().After(deadline) {
			t.Fatalf("Complete repeated, the replica resumed: %v", err)
		}
	}
	if v, err := rc.Get(ctx, s.RedisKey(key)).Result(); err != nil || !strings.HasPrefix(v, "d") {
		t.Fatalf("the replica holds %.1q, %v; want the record", v, err)
	}
}

// With WaitReplicas, an Extend that no replica acknowledged fails (the
// holder must not count on a lease a promoted replica would not have);
// a Release does not wait (losing one only keeps the key in flight until
// its lease ends).
func TestWaitReplicasExtendStalled(t *testing.T) {
	t.Parallel()
	client, replica := replicatedPairServers(t)
	ctx := t.Context()
	cfg := redisstore.Config{KeyPrefix: randomPrefix(t), WaitReplicas: 1, WaitTimeout: time.Second}
	s := newStore(t, client, client, cfg)
	key := keystoretest.Key(t)
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	rc := redis.NewClient(&redis.Options{Addr: replica.addr})
	t.Cleanup(func() { rc.Close() })
	pid := serverPid(t, rc)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	if _, err := s.Extend(ctx, key, c.Token, time.Minute); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("Extend, the replica stalled: %v; want ErrNotReplicated", err)
	}
	// The extension is on the master: the token still holds the key.
	if err := s.Release(ctx, key, c.Token); err != nil {
		t.Fatalf("Release, the replica stalled: %v; want released without waiting", err)
	}
}

// serverPid returns the process id of the server c talks to.
func serverPid(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no process_id in INFO server:\n%s", info)
	return 0
}

// BenchmarkCompleteWaitReplicas measures a Complete of the store's own
// claim on a private master with one replica, with WaitReplicas 0 and 1:
// time, allocations and round trips (trips/op) of the Complete alone.
//
//	go test -run '^$' -bench CompleteWaitReplicas -benchmem -benchtime 2000x ./keystore/redisstore/
func BenchmarkCompleteWaitReplicas(b *testing.B) {
	for _, wait := range []int{0, 1} {
		b.Run("WaitReplicas="+strconv.Itoa(wait), func(b *testing.B) {
			client, _ := replicatedPairServers(b)
			h := new(commandCounter)
			client.AddHook(h)
			s := newStore(b, client, client, redisstore.Config{WaitReplicas: wait, WaitTimeout: 10 * time.Second})
			ctx := context.Background()
			rec := encode(record.Record{StatusCode: 201, Body: []byte(`{"stored":["r1"]}`)})
			keys := make([]string, b.N)
			toks := make([]keystore.Token, b.N)
			for i := range keys {
				keys[i] = "bench-" + strconv.Itoa(i)
				c, err := newClaim(ctx, s, keys[i], keystore.Fingerprint{1}, time.Minute)
				if err != nil || !c.Acquired {
					b.Fatalf("Claim: %v %v", c.State, err)
				}
				toks[i] = c.Token
			}
			h.take()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := s.Complete(ctx, keys[i], toks[i], rec, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(h.take()))/float64(b.N), "trips/op")
		})
	}
}

// Through the middleware, with WaitReplicas 1 and the replica stalled after
// the claim: the handler's 201 is sent (the work is done), the request's
// Event reports the Complete that no replica acknowledged, and the record
// is retried in the background until the replica, resumed, has it; the
// middleware's Shutdown then reports nothing given up.
func TestWaitReplicasMiddlewareRecordRetried(t *testing.T) {
	t.Parallel()
	client, replica := replicatedPairServers(t)
	rc := redis.NewClient(&redis.Options{Addr: replica.addr})
	t.Cleanup(func() { rc.Close() })
	pid := serverPid(t, rc)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	prefix := randomPrefix(t)
	s := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix, WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond})
	events := make(chan middleware.Event, 1)
	m := newMiddleware(t, s, middleware.Config{Lease: 30 * time.Second, Observer: func(e middleware.Event) { events <- e }})
	stall := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The claim was acknowledged; the record will not be.
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Error(err)
		}
		ingest(w, r)
	})
	key := "key-" + randomPrefix(t)
	if w := post(m.Handler(stall), key); w.Code != http.StatusCreated {
		t.Fatalf("first call answered %d %s", w.Code, w.Body)
	}
	if e := <-events; e.Outcome != middleware.StoreError || !errors.Is(e.Err, redisstore.ErrNotReplicated) {
		t.Fatalf("first call's event: %v %v; want StoreError with ErrNotReplicated", e.Outcome, e.Err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v; want the record written in the background", err)
	}
	// The replica has the record (the only key of the store's prefix; the
	// middleware derives the store's key from the Idempotency-Key). The
	// replica acknowledged it, so it holds it already.
	keys, err := rc.Keys(t.Context(), prefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the replica's keys: %q, %v; want one", keys, err)
	}
	if v, err := rc.Get(t.Context(), keys[0]).Result(); err != nil || !strings.HasPrefix(v, "d") {
		t.Fatalf("the replica holds %.1q, %v; want the record", v, err)
	}
	if w := post(m.Handler(ingest), key); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry answered %d %v; want the replay", w.Code, w.Header())
	}
}
