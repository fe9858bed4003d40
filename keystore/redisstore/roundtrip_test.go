package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// commandCounter is a go-redis hook that records every round trip a client
// makes: a single command by its name, a pipeline by its commands' names
// joined with "+".
type commandCounter struct {
	mu    sync.Mutex
	trips []string
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, cmd := range cmds {
			names[i] = cmd.Name()
		}
		h.add(strings.Join(names, "+"))
		return next(ctx, cmds)
	}
}

func (h *commandCounter) add(trip string) {
	h.mu.Lock()
	h.trips = append(h.trips, trip)
	h.mu.Unlock()
}

// take returns the round trips recorded since the last take, and forgets
// them.
func (h *commandCounter) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.trips
	h.trips = nil
	return n
}

// claimTrip is the round trip of a Claim that needs no script, a new key or
// a completed key: the one command a claim by hand sends.
const claimTrip = "set"

// expectRoundTrips runs op and checks the round trips it made.
func expectRoundTrips(t *testing.T, h *commandCounter, what string, want []string, op func() error) {
	t.Helper()
	h.take()
	if err := op(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := h.take(); !slices.Equal(got, want) {
		t.Errorf("%s made %d round trips %q, want %d %q", what, len(got), got, len(want), want)
	}
}

// warmScripts makes sure every node s may use has the store's scripts
// cached, by running each operation, and a takeover, on 64 keys.
func warmScripts(t *testing.T, s *redisstore.Store) {
	t.Helper()
	ctx := t.Context()
	// On a cluster, 64 random keys miss one of three masters with
	// probability 3·(2/3)⁶⁴ < 10⁻¹⁰.
	// The claim script runs for a key in flight; here, to take over an
	// expired lease: let 64 short leases run out and take them over.
	expired := make([]string, 64)
	for i := range expired {
		expired[i] = keystoretest.Key(t)
		if _, err := newClaim(ctx, s, expired[i], keystore.Fingerprint{1}, 10*time.Millisecond); err != nil {
			t.Fatalf("warm-up Claim: %v", err)
		}
	}
	time.Sleep(40 * time.Millisecond)
	for _, key := range expired {
		if c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute); err != nil || !c.TookOver {
			t.Fatalf("warm-up takeover: %v, TookOver %v", err, c.TookOver)
		}
	}
	for range 64 {
		key := keystoretest.Key(t)
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil {
			t.Fatalf("warm-up Claim: %v", err)
		}
		if _, err := s.Extend(ctx, key, c.Token, time.Minute); err != nil {
			t.Fatalf("warm-up Extend: %v", err)
		}
		if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 200}), time.Minute); err != nil {
			t.Fatalf("warm-up Complete: %v", err)
		}
		if err := s.Release(ctx, key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("warm-up Release: %v", err)
		}
	}
}

// firstCallAndReplay checks that, with the scripts cached, a first call
// (Claim, Complete) makes 2 round trips and a replay 1, that Extend and
// Release make one each, and a claim of a key in flight two (the SET, then
// the claim script for the lease remaining).
func firstCallAndReplay(t *testing.T, s *redisstore.Store, h *commandCounter) {
	t.Helper()
	warmScripts(t, s)
	ctx := t.Context()
	for range 10 {
		key := keystoretest.Key(t)
		var c claimed
		expectRoundTrips(t, h, "first call", []string{claimTrip, "evalsha"}, func() error {
			var err error
			if c, err = newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute); err != nil {
				return err
			}
			if !c.Acquired {
				return errors.New("claim not acquired: " + c.State.String())
			}
			return s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 201, Body: []byte("ok")}), time.Minute)
		})
		expectRoundTrips(t, h, "replay", []string{claimTrip}, func() error {
			r, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
			if err == nil && (r.State != keystore.Completed || string(testkit.Decoded(r.Record).Body) != "ok") {
				err = errors.New("replay did not return the record")
			}
			return err
		})
		other := keystoretest.Key(t)
		var held claimed
		expectRoundTrips(t, h, "claim, extend", []string{claimTrip, "evalsha"}, func() error {
			var err error
			if held, err = newClaim(ctx, s, other, keystore.Fingerprint{1}, time.Minute); err != nil {
				return err
			}
			return extend(ctx, s, other, held.Token, time.Minute)
		})
		expectRoundTrips(t, h, "claim in flight", []string{claimTrip, "evalsha"}, func() error {
			c, err := newClaim(ctx, s, other, keystore.Fingerprint{1}, time.Minute)
			if err == nil && (c.Acquired || c.State != keystore.InFlight || c.LeaseRemaining <= 0 || c.LeaseRemaining > time.Minute) {
				err = fmt.Errorf("claim of a held key: %v, lease remaining %v", c.State, c.LeaseRemaining)
			}
			return err
		})
		expectRoundTrips(t, h, "release", []string{"evalsha"}, func() error {
			return s.Release(ctx, other, held.Token)
		})
	}
	takeover(t, s, h, []string{claimTrip, "evalsha"})
}

// takeover checks that claiming a key whose lease has run out takes it over
// in two round trips, the second the claim script (want).
func takeover(t *testing.T, s *redisstore.Store, h *commandCounter, want []string) {
	t.Helper()
	ctx := t.Context()
	key := keystoretest.Key(t)
	if c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, 20*time.Millisecond); err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	time.Sleep(60 * time.Millisecond) // the lease is judged by the Redis server's clock
	expectRoundTrips(t, h, "takeover of an expired lease", want, func() error {
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err == nil && (!c.Acquired || !c.TookOver) {
			err = fmt.Errorf("claim after the lease ran out: %v, TookOver %v", c.State, c.TookOver)
		}
		return err
	})
}

func TestRoundTrips(t *testing.T) {
	t.Parallel()
	direct := standaloneClient(t)
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr})
	t.Cleanup(func() { client.Close() })
	h := new(commandCounter)
	client.AddHook(h)
	firstCallAndReplay(t, newStore(t, client, direct, redisstore.Config{}), h)
}

func TestRoundTripsCluster(t *testing.T) {
	t.Parallel()
	client := clusterClient(t)
	h := new(commandCounter)
	client.AddHook(h)
	firstCallAndReplay(t, newStore(t, client, client, redisstore.Config{}), h)
}

// After SCRIPT FLUSH (or a restart), EVALSHA fails with NOSCRIPT and the
// store falls back to EVAL, once per script; every operation still works,
// and a claim that needs no script is unaffected.
// It flushes a private server, not the shared one.
func TestScriptFlushFallback(t *testing.T) {
	t.Parallel()
	srv := privateServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.addr})
	t.Cleanup(func() { client.Close() })
	h := new(commandCounter)
	client.AddHook(h)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	warmScripts(t, s)
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	key := keystoretest.Key(t)
	var c claimed
	expectRoundTrips(t, h, "claim after SCRIPT FLUSH", []string{claimTrip}, func() error {
		var err error
		c, err = newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		return err
	})
	expectRoundTrips(t, h, "complete after SCRIPT FLUSH", []string{"evalsha", "eval"}, func() error {
		return s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 201}), time.Minute)
	})
	expectRoundTrips(t, h, "replay after SCRIPT FLUSH", []string{claimTrip}, func() error {
		r, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err == nil && r.State != keystore.Completed {
			err = errors.New("replay: " + r.State.String())
		}
		return err
	})
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	takeover(t, s, h, []string{claimTrip, "evalsha", "eval"})
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	other := keystoretest.Key(t)
	c, err := newClaim(ctx, s, other, keystore.Fingerprint{1}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(ctx, other, c.Token, time.Minute); err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, other, c.Token); err != nil {
		t.Fatalf("Release after SCRIPT FLUSH: %v", err)
	}
}

// Not parallel: the flushes would disturb TestRoundTripsCluster, which
// counts commands on the same cluster.
func TestScriptFlushFallbackCluster(t *testing.T) {
	client := clusterClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	warmScripts(t, s)
	flush := func() {
		t.Helper()
		if err := client.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.ScriptFlush(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		key := keystoretest.Key(t)
		flush()
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || !c.Acquired {
			t.Fatalf("Claim after SCRIPT FLUSH: %v %v", c.State, err)
		}
		flush()
		if _, err := s.Extend(ctx, key, c.Token, time.Minute); err != nil {
			t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
		}
		flush()
		if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 201}), time.Minute); err != nil {
			t.Fatalf("Complete after SCRIPT FLUSH: %v", err)
		}
		flush()
		if r, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute); err != nil || r.State != keystore.Completed {
			t.Fatalf("replay after SCRIPT FLUSH: %v %v", r.State, err)
		}
	}
}
