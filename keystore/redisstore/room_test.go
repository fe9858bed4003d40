package redisstore_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// What all clients together add is bounded by MaxMemory: past it, on a
// server of its own, a new key is refused with a store FullError (not a
// client's), writing nothing, and a RetryAfter no later than the records'
// retention; a replay and a key in flight are answered as usual; and once
// the records expire, new keys are taken again.
func TestMaxMemoryRefusesNewKeys(t *testing.T) {
	srv := privateServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.addr})
	t.Cleanup(func() { client.Close() })
	ctx := t.Context()
	used0 := usedMemory(t, client)
	const retention = 4 * time.Second
	s := newStore(t, client, client, redisstore.Config{MaxMemory: used0 + 512<<10, ClientKeys: 1 << 20})
	rec := encode(record.Record{StatusCode: 201, Body: bytes.Repeat([]byte("x"), 1024)})
	args := func() keystore.ClaimArgs {
		return keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: keystore.NewToken(), Client: "c"}
	}
	prefix := keystoretest.Key(t)[:16]
	inFlight := prefix + "in-flight"
	if c, err := s.Claim(ctx, inFlight, args()); err != nil || !c.Acquired {
		t.Fatalf("claim: %+v %v", c, err)
	}
	var done string
	var fe *keystore.FullError
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal after %d new keys (used_memory %d, bound %d)", i, usedMemory(t, client), used0+512<<10)
		}
		key, a := prefix+strconv.Itoa(i), args()
		c, err := s.Claim(ctx, key, a)
		if errors.As(err, &fe) {
			if n, err := client.Exists(ctx, s.RedisKey(key)).Result(); err != nil || n != 0 {
				t.Fatalf("a refused key left an entry: %d %v", n, err)
			}
			t.Logf("refused after %d new keys: %v", i, fe)
			break
		}
		if err != nil || !c.Acquired {
			t.Fatalf("claim %d: %+v %v", i, c, err)
		}
		if err := s.Complete(ctx, key, a.Token, rec, retention); err != nil {
			t.Fatal(err)
		}
		done = key
	}
	if fe.Client || fe.RetryAfter <= 0 || fe.RetryAfter > retention {
		t.Fatalf("refusal %+v: want a store's (Client false), with a RetryAfter in (0, %v]", fe, retention)
	}
	if c, err := s.Claim(ctx, done, args()); err != nil || c.State != keystore.Completed {
		t.Fatalf("a replay while full: %+v %v", c, err)
	}
	if c, err := s.Claim(ctx, inFlight, args()); err != nil || c.State != keystore.InFlight || c.Acquired {
		t.Fatalf("a duplicate in flight while full: %+v %v", c, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := s.Claim(ctx, keystoretest.Key(t), args())
		if err == nil && c.Acquired {
			break
		}
		if !errors.As(err, &fe) || time.Now().After(deadline) {
			t.Fatalf("after the records expired: %+v %v; want the key acquired", c, err)
		}
	}
}

func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(t.Context(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// On a Cluster too (the largest of the masters' memory counts), a store
// whose bound is below what the servers hold refuses new keys from its
// first claim, telling when its own earliest key expires, and answers a
// key it holds.
func TestMaxMemoryCluster(t *testing.T) {
	client := clusterClient(t)
	ctx := t.Context()
	cfg := redisstore.Config{KeyPrefix: randomPrefix(t)}
	free := newStore(t, client, client, cfg)
	key, tok := keystoretest.Key(t), keystore.NewToken()
	if c, err := free.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: tok}); err != nil || !c.Acquired {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if err := free.Complete(ctx, key, tok, encode(record.Record{StatusCode: 201}), time.Hour); err != nil {
		t.Fatal(err)
	}
	cfg.MaxMemory, cfg.Durability = 1, redisstore.AcceptVolatile
	s, err := redisstore.New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: keystore.NewToken()}
	var fe *keystore.FullError
	if _, err := s.Claim(ctx, keystoretest.Key(t), a); !errors.As(err, &fe) || fe.Client || fe.RetryAfter <= 59*time.Minute || fe.RetryAfter > time.Hour {
		t.Fatalf("a new key past MaxMemory: %v; want a store FullError with RetryAfter the record's hour", err)
	}
	if c, err := s.Claim(ctx, key, a); err != nil || c.State != keystore.Completed {
		t.Fatalf("a replay past MaxMemory: %+v %v", c, err)
	}
}
