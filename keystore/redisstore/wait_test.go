package redisstore_test

import (
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

// replicatedPair starts a private master and one replica of it, and returns
// a client of the master once the replica is online.
func replicatedPair(t *testing.T) *redis.Client {
	t.Helper()
	client, _ := replicatedPairServers(t)
	return client
}

// replicatedPairServers is replicatedPair, and also returns the replica.
func replicatedPairServers(t testing.TB) (*redis.Client, *redisServer) {
	t.Helper()
	return replicatedPairOf(t, func(args ...string) *redisServer { return privateServer(t, args...) })
}

// replicatedPairOf is replicatedPairServers with the servers start starts
// (redis-server, valkey-server).
func replicatedPairOf(t testing.TB, start func(args ...string) *redisServer) (*redis.Client, *redisServer) {
	t.Helper()
	master := start("--repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(master.addr, ":")
	replica := start("--replicaof", host, port)
	client := redis.NewClient(&redis.Options{Addr: master.addr})
	t.Cleanup(func() { client.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := client.Info(t.Context(), "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online") {
			// Online is not yet acknowledging: wait until a write is.
			if err := client.Set(t.Context(), "replication-probe", "1", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if n, err := client.Wait(t.Context(), 1, time.Second).Result(); err == nil && n == 1 {
				return client, replica
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica not online after 20s: %v\n%s", err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	client := replicatedPair(t)
	h := new(commandCounter)
	client.AddHook(h)
	ctx := t.Context()
	prefix := randomPrefix(t)
	plain := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix})

	t.Run("Acknowledged", func(t *testing.T) {
		// A generous timeout: the machine is shared, and an acknowledged
		// WAIT returns as soon as the replica answers.
		s := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix, WaitReplicas: 1, WaitTimeout: 10 * time.Second})
		warmScripts(t, s)
		key := keystoretest.Key(t)
		var c claimed
		expectRoundTrips(t, h, "claim with WaitReplicas 1", []string{claimTrip, "wait"}, func() error {
			var err error
			c, err = newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
			if err == nil && !c.Acquired {
				err = errors.New(c.State.String())
			}
			return err
		})
		expectRoundTrips(t, h, "in-flight claim with WaitReplicas 1", []string{claimTrip, "evalsha"}, func() error {
			_, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
			return err
		})
		expectRoundTrips(t, h, "extend with WaitReplicas 1", []string{"evalsha", "wait"}, func() error {
			_, err := s.Extend(ctx, key, c.Token, time.Minute)
			return err
		})
		expectRoundTrips(t, h, "complete with WaitReplicas 1", []string{"evalsha", "wait"}, func() error {
			return s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 201}), time.Minute)
		})
		expectRoundTrips(t, h, "replay with WaitReplicas 1", []string{claimTrip}, func() error {
			_, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
			return err
		})
	})

	t.Run("NotAcknowledged", func(t *testing.T) {
		const timeout = 100 * time.Millisecond
		s := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix, WaitReplicas: 2, WaitTimeout: timeout})
		key := keystoretest.Key(t)
		start := time.Now()
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		elapsed := time.Since(start)
		tok := c.Token
		if !errors.Is(err, redisstore.ErrNotReplicated) || errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("Claim with WaitReplicas 2 and one replica = %v, %v; want ErrNotReplicated", c.State, err)
		}
		if elapsed < timeout || elapsed > 10*timeout {
			t.Errorf("the failed claim took %v; WAIT's timeout is %v", elapsed, timeout)
		}
		// The refused claim was released by its token, which is fenced,
		// and the key is free, not in flight.
		if late, err := claimWith(ctx, plain, key, keystore.Fingerprint{1}, time.Minute, tok); !errors.Is(err, keystore.ErrLeaseLost) || late.Acquired {
			t.Fatalf("Claim with the refused claim's token = acquired %v, %v; want ErrLeaseLost", late.Acquired, err)
		}
		again, err := newClaim(ctx, plain, key, keystore.Fingerprint{2}, time.Minute)
		if err != nil || !again.Acquired || again.TookOver {
			t.Fatalf("Claim after the refused one = %v (took over %v), %v; want acquired from absent", again.State, again.TookOver, err)
		}
	})
	t.Run("ClientBound", func(t *testing.T) {
		// With WaitReplicas the count follows the acknowledged claim.
		s := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix, WaitReplicas: 1, WaitTimeout: 10 * time.Second, ClientKeys: 3, ClientWindow: time.Hour})
		warmScripts(t, s)
		var first string
		var firstTok keystore.Token
		for i := range 3 {
			key := keystoretest.Key(t)
			tok := keystore.NewToken()
			c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: tok, Client: "c"})
			if err != nil || !c.Acquired {
				t.Fatalf("new key %d: %v %v", i+1, c.State, err)
			}
			if i == 0 {
				first, firstTok = key, tok
			}
		}
		if err := s.Complete(ctx, first, firstTok, record.Append(nil, record.Record{StatusCode: 201}), time.Hour); err != nil {
			t.Fatal(err)
		}
		var fe *keystore.FullError
		if _, err := s.Claim(ctx, keystoretest.Key(t), keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: keystore.NewToken(), Client: "c"}); !errors.As(err, &fe) || !fe.Client {
			t.Fatalf("new key 4 past a bound of 3: %v, want a client FullError", err)
		}
		if c, err := s.Claim(ctx, first, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: keystore.NewToken(), Client: "c"}); err != nil || c.State != keystore.Completed {
			t.Fatalf("replay past the bound: %v %v", c.State, err)
		}
	})
}

// On a Cluster the WAIT runs on the key's master; this test cluster has no
// replicas, so a claim that asks for one is refused and released, and an
// Extend or a Complete fails with ErrNotReplicated.
func TestWaitReplicasCluster(t *testing.T) {
	t.Parallel()
	client := clusterClient(t)
	prefix := randomPrefix(t)
	s := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix, WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	plain := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix})
	ctx := t.Context()
	for i := range 6 {
		key := keystoretest.Key(t) + strconv.Itoa(i)
		if _, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute); !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("Claim needing a replica on a cluster without any: %v, want ErrNotReplicated", err)
		}
		c, err := newClaim(ctx, plain, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || !c.Acquired || c.TookOver {
			t.Fatalf("Claim after the refused one: %v %v", c.State, err)
		}
		// Extend and Complete run on the key's master too, and are not
		// acknowledged either; the record is stored there all the same.
		if _, err := s.Extend(ctx, key, c.Token, time.Minute); !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("Extend needing a replica on a cluster without any: %v, want ErrNotReplicated", err)
		}
		if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 201}), time.Minute); !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("Complete needing a replica on a cluster without any: %v, want ErrNotReplicated", err)
		}
		if r, err := newClaim(ctx, plain, key, keystore.Fingerprint{1}, time.Minute); err != nil || r.State != keystore.Completed {
			t.Fatalf("Claim after the unacknowledged Complete: %v %v, want the record", r.State, err)
		}
	}
}
