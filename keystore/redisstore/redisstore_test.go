package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// standaloneAddr is the shared Redis 7 of these machines (scripts/services
// starts it): $GEOIDEM_TEST_REDIS, or 127.0.0.1:6379.
var standaloneAddr = testkit.SharedAddr()

// standaloneClient returns a client of the shared Redis, failing the test
// (never skipping it) when Redis cannot be reached.
func standaloneClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: standaloneAddr})
	t.Cleanup(func() { c.Close() })
	ping(t, c, standaloneAddr)
	return c
}

// clusterClient returns a client of the test run's Redis Cluster.
func clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := clusterAddrs(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { c.Close() })
	ping(t, c, strings.Join(addrs, ","))
	return c
}

func ping(t testing.TB, c redis.UniversalClient, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s is unreachable (these tests need it and never skip): %v", addr, err)
	}
}

// newStore returns a Store on client with a key prefix of its own, and
// deletes the prefix's keys, through cleanup, when the test ends. cleanup
// may differ from client when client's path to Redis is broken on purpose.
// Unless cfg asks for a durability check, the store accepts a volatile
// server: the shared Redis and the private ones run without persistence.
func newStore(t testing.TB, client, cleanup redis.UniversalClient, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = randomPrefix(t)
	}
	if cfg.Durability == redisstore.RefuseVolatile {
		cfg.Durability = redisstore.AcceptVolatile
	}
	s, err := redisstore.New(client, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { deletePrefix(t, cleanup, cfg.KeyPrefix) })
	return s
}

func randomPrefix(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "geoidem-test:" + hex.EncodeToString(b[:]) + ":"
}

// deletePrefix deletes every key that starts with prefix, on every master.
func deletePrefix(t testing.TB, c redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testkit.DeletePrefix(ctx, c, prefix); err != nil {
		t.Errorf("deleting the test's keys (prefix %s): %v", prefix, err)
	}
}

func TestConformance(t *testing.T) { conformance(t, onStandalone) }

func TestConformanceCluster(t *testing.T) { conformance(t, onCluster) }

// conformance runs keystoretest's suite on stores on the client that
// newClient returns, with and without auto-pipelining, each with a bound
// on each client's new keys (keystore.ClientBounded's rules; the other
// rules claim without a client, or for one only a key).
func conformance(t *testing.T, newClient func(testing.TB) redis.UniversalClient) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		cfg.ClientKeys, cfg.ClientWindow = 8, time.Hour
		client := newClient(t)
		keystoretest.Run(t, func(t *testing.T) keystore.Store {
			return newStore(t, client, client, cfg)
		})
	})
}

func onStandalone(t testing.TB) redis.UniversalClient { return standaloneClient(t) }
func onCluster(t testing.TB) redis.UniversalClient    { return clusterClient(t) }

func TestNewRejectsBadConfig(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr})
	defer client.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": standaloneAddr}})
	defer ring.Close()
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		cfg    redisstore.Config
	}{
		{"NilClient", nil, redisstore.Config{}},
		{"OpenBraceInPrefix", client, redisstore.Config{KeyPrefix: "app{"}},
		{"HashTagInPrefix", client, redisstore.Config{KeyPrefix: "{app}:"}},
		{"NegativeWaitReplicas", client, redisstore.Config{WaitReplicas: -1}},
		{"NegativeWaitTimeout", client, redisstore.Config{WaitReplicas: 1, WaitTimeout: -time.Second}},
		{"WaitReplicasOnRing", ring, redisstore.Config{WaitReplicas: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := redisstore.New(tc.client, tc.cfg); err == nil {
				t.Errorf("New(%T, %+v) = %v, nil; want an error", tc.client, tc.cfg, s)
			}
		})
	}
	if _, err := redisstore.New(ring, redisstore.Config{Durability: redisstore.AcceptVolatile}); err != nil {
		t.Errorf("New(ring) without WaitReplicas: %v", err)
	}
}

func TestRedisKeyCarriesHashTag(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr})
	defer client.Close()
	s, err := redisstore.New(client, redisstore.Config{Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.RedisKey("abc"), redisstore.DefaultKeyPrefix+"{abc}"; got != want {
		t.Errorf("RedisKey(abc) = %q, want %q", got, want)
	}
	s, err = redisstore.New(client, redisstore.Config{KeyPrefix: "tenant-7:", Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.RedisKey("abc"), "tenant-7:{abc}"; got != want {
		t.Errorf("RedisKey(abc) = %q, want %q", got, want)
	}
}

// In a Cluster the entry lands on the slot of the idempotency key itself,
// whatever the prefix: the hash tag works.
func TestClusterSlotIsKeySlot(t *testing.T) {
	t.Parallel()
	client := clusterClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	for range 20 {
		key := keystoretest.Key(t)
		want, err := client.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		got, err := client.ClusterKeySlot(ctx, s.RedisKey(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("RedisKey(%s) hashes to slot %d, the key itself to %d", key, got, want)
		}
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || !c.Acquired {
			t.Fatalf("Claim: %v %v", c.State, err)
		}
		if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 200}), time.Minute); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	// Keys with braces of their own still map to one Redis key each.
	suffix := keystoretest.Key(t)[:16]
	for _, key := range []string{"{" + suffix, suffix + "}", "}{" + suffix, "{}" + suffix, "{" + suffix + "}x"} {
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || !c.Acquired {
			t.Fatalf("Claim(%q): %v %v", key, c.State, err)
		}
		if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 200, Body: []byte(key)}), time.Minute); err != nil {
			t.Fatalf("Complete(%q): %v", key, err)
		}
		r, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || r.State != keystore.Completed || string(testkit.Decoded(r.Record).Body) != key {
			t.Fatalf("replay of %q: %v %v %q", key, r.State, err, testkit.Decoded(r.Record).Body)
		}
	}
}

// The stored entry's expiry is the lease plus the takeover grace while in
// flight, and the retention once completed, in milliseconds; the record is
// stored compactly, its body byte for byte.
func TestExpiriesAndEncoding(t *testing.T) {
	t.Parallel()
	client := standaloneClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	key := keystoretest.Key(t)
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, 10*time.Second+time.Nanosecond)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	ttl, err := client.PTTL(ctx, s.RedisKey(key)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// 10s+1ns rounds up to 10.001s, plus a minute of grace.
	if want := 70*time.Second + time.Millisecond; ttl > want || ttl < want-5*time.Second {
		t.Errorf("in-flight PTTL = %v, want about %v (lease, rounded up to a millisecond, plus grace)", ttl, want)
	}
	in, err := newClaim(ctx, s, key, keystore.Fingerprint{2}, time.Minute)
	if err != nil || in.Acquired || in.State != keystore.InFlight {
		t.Fatalf("second Claim: %v %v", in.State, err)
	}
	if in.LeaseRemaining > 10*time.Second+time.Millisecond || in.LeaseRemaining < 5*time.Second {
		t.Errorf("LeaseRemaining = %v, want just under 10.001s", in.LeaseRemaining)
	}
	body := []byte(`{"id":"feature-1"}`)
	rec := record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
	if err := s.Complete(ctx, key, c.Token, encode(rec), 90*time.Minute); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	ttl, err = client.PTTL(ctx, s.RedisKey(key)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := 90 * time.Minute; ttl > want || ttl < want-5*time.Second {
		t.Errorf("completed PTTL = %v, want about %v", ttl, want)
	}
	v, err := client.Get(ctx, s.RedisKey(key)).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// 1 status byte, 32 of fingerprint, 8 of the completing token, the
	// record: status (2), one field (1), name (1+12), one value (1+1+16),
	// body.
	if want := 1 + 32 + 8 + 2 + 1 + 13 + 1 + 17 + len(body); len(v) != want {
		t.Errorf("stored value is %d bytes, want %d", len(v), want)
	}
	if !strings.HasSuffix(string(v), string(body)) {
		t.Errorf("stored value %q does not end with the body byte for byte", v)
	}
}

// A Redis key under the store's prefix that holds something else is an
// error, never mistaken for an absent key or a lost lease, and neither a
// Claim nor a Release changes it: also a string that begins with the
// letter of an in-flight ('i') or released ('r') entry, with or without
// an expiry.
func TestForeignValueIsAnError(t *testing.T) {
	t.Parallel()
	client := standaloneClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	strs := map[string]struct {
		v   string
		ttl time.Duration
	}{
		keystoretest.Key(t): {"hello", time.Minute},
		keystoretest.Key(t): {"redis", 0},
		keystoretest.Key(t): {"released but not by us", time.Minute},
		keystoretest.Key(t): {"ice", 0},
		keystoretest.Key(t): {"in flight, not an entry", time.Minute},
	}
	hash := keystoretest.Key(t)
	for key, f := range strs {
		if err := client.Set(ctx, s.RedisKey(key), f.v, f.ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.HSet(ctx, s.RedisKey(hash), "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	for key := range strs {
		if c, err := newClaim(ctx, s, key, keystore.Fingerprint{}, time.Minute); err == nil || errors.Is(err, keystore.ErrLeaseLost) {
			t.Errorf("Claim of a key holding %q = acquired %v, %v, %v; want an error that is not ErrLeaseLost", strs[key].v, c.Acquired, c.State, err)
		}
		if err := s.Release(ctx, key, keystore.NewToken()); err == nil {
			t.Errorf("Release of a key holding %q succeeded", strs[key].v)
		}
	}
	if c, err := newClaim(ctx, s, hash, keystore.Fingerprint{}, time.Minute); err == nil || errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Claim of a key holding a hash = %v, %v; want an error that is not ErrLeaseLost", c.State, err)
	}
	for key, f := range strs {
		if got, _ := client.Get(ctx, s.RedisKey(key)).Result(); got != f.v {
			t.Errorf("the foreign value %q became %q", f.v, got)
		}
		if n, _ := client.Exists(ctx, s.RedisKey(key)+":fenced").Result(); n != 0 {
			t.Errorf("a Release of the key holding %q left a fence set", f.v)
		}
	}
}

func TestNonPositiveDurations(t *testing.T) {
	client := standaloneClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	key := keystoretest.Key(t)
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := newClaim(ctx, s, key, keystore.Fingerprint{}, d); !errors.Is(err, keystore.ErrInvalidClaim) {
			t.Errorf("Claim with lease %v: %v, want ErrInvalidClaim", d, err)
		}
	}
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim after the refused ones: %v %v", c.State, err)
	}
	if left, err := s.Extend(ctx, key, c.Token, 0); err == nil || errors.Is(err, keystore.ErrLeaseLost) || left != 0 {
		t.Errorf("Extend with lease 0: %v, %v; want 0 and a non-ErrLeaseLost error", left, err)
	}
	if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 200}), 0); err == nil || errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete with retention 0: %v, want a non-ErrLeaseLost error", err)
	}
	if err := s.Release(ctx, key, c.Token); err != nil {
		t.Errorf("Release after the refused calls: %v", err)
	}
}

// forEachMode runs f, in parallel subtests, for a Store that batches
// concurrent commands (the default) and for one that sends each command on
// its own (Config.NoAutoPipeline).
func forEachMode(t *testing.T, f func(t *testing.T, cfg redisstore.Config)) {
	for _, m := range []struct {
		name string
		cfg  redisstore.Config
	}{{"AutoPipeline", redisstore.Config{}}, {"NoAutoPipeline", redisstore.Config{NoAutoPipeline: true}}} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m.cfg)
		})
	}
}
