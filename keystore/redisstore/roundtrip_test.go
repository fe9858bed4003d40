package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// commandCounter is a go-redis hook that records the name of every command
// a client sends, pipelined or not.
type commandCounter struct {
	mu    sync.Mutex
	names []string
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *commandCounter) add(cmd redis.Cmder) {
	h.mu.Lock()
	h.names = append(h.names, cmd.Name())
	h.mu.Unlock()
}

// take returns the names recorded since the last take, and forgets them.
func (h *commandCounter) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.names
	h.names = nil
	return n
}

// expectCommands runs op and checks the commands it sent.
func expectCommands(t *testing.T, h *commandCounter, what string, want []string, op func() error) {
	t.Helper()
	h.take()
	if err := op(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := h.take(); !slices.Equal(got, want) {
		t.Errorf("%s sent %d commands %v, want %d %v", what, len(got), got, len(want), want)
	}
}

// warmScripts makes sure every node s may use has the store's scripts
// cached, by running each operation once.
func warmScripts(t *testing.T, s *redisstore.Store) {
	t.Helper()
	ctx := t.Context()
	// On a cluster, 64 random keys miss one of three masters with
	// probability 3·(2/3)⁶⁴ < 10⁻¹⁰.
	for range 64 {
		key := keystoretest.Key(t)
		c, err := s.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil {
			t.Fatalf("warm-up Claim: %v", err)
		}
		if err := s.Extend(ctx, key, c.Token, time.Minute); err != nil {
			t.Fatalf("warm-up Extend: %v", err)
		}
		if err := s.Complete(ctx, key, c.Token, keystore.Record{StatusCode: 200}, time.Minute); err != nil {
			t.Fatalf("warm-up Complete: %v", err)
		}
		if err := s.Release(ctx, key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("warm-up Release: %v", err)
		}
	}
}

// firstCallAndReplay checks that, with the scripts cached, a first call
// (Claim, Complete) sends 2 commands and a replay 1, and that Extend and
// Release send one each.
func firstCallAndReplay(t *testing.T, s *redisstore.Store, h *commandCounter) {
	t.Helper()
	warmScripts(t, s)
	ctx := t.Context()
	for range 10 {
		key := keystoretest.Key(t)
		var c keystore.Claim
		expectCommands(t, h, "first call", []string{"evalsha", "evalsha"}, func() error {
			var err error
			if c, err = s.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute); err != nil {
				return err
			}
			if c.State != keystore.Acquired {
				return errors.New("claim not acquired: " + c.State.String())
			}
			return s.Complete(ctx, key, c.Token, keystore.Record{StatusCode: 201, Body: []byte("ok")}, time.Minute)
		})
		expectCommands(t, h, "replay", []string{"evalsha"}, func() error {
			r, err := s.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute)
			if err == nil && (r.State != keystore.Completed || string(r.Record.Body) != "ok") {
				err = errors.New("replay did not return the record")
			}
			return err
		})
		other := keystoretest.Key(t)
		expectCommands(t, h, "claim, extend, release", []string{"evalsha", "evalsha", "evalsha"}, func() error {
			c, err := s.Claim(ctx, other, keystore.Fingerprint{1}, time.Minute)
			if err != nil {
				return err
			}
			if err := s.Extend(ctx, other, c.Token, time.Minute); err != nil {
				return err
			}
			return s.Release(ctx, other, c.Token)
		})
	}
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
// store falls back to EVAL, once per script; every operation still works.
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
	var c keystore.Claim
	expectCommands(t, h, "claim after SCRIPT FLUSH", []string{"evalsha", "eval"}, func() error {
		var err error
		c, err = s.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute)
		return err
	})
	expectCommands(t, h, "complete after SCRIPT FLUSH", []string{"evalsha", "eval"}, func() error {
		return s.Complete(ctx, key, c.Token, keystore.Record{StatusCode: 201}, time.Minute)
	})
	expectCommands(t, h, "replay once the claim script is cached again", []string{"evalsha"}, func() error {
		r, err := s.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute)
		if err == nil && r.State != keystore.Completed {
			err = errors.New("replay: " + r.State.String())
		}
		return err
	})
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	other := keystoretest.Key(t)
	c, err := s.Claim(ctx, other, keystore.Fingerprint{1}, time.Minute)
	if err != nil || c.State != keystore.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(ctx, other, c.Token, time.Minute); err != nil {
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
		c, err := s.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || c.State != keystore.Acquired {
			t.Fatalf("Claim after SCRIPT FLUSH: %v %v", c.State, err)
		}
		flush()
		if err := s.Extend(ctx, key, c.Token, time.Minute); err != nil {
			t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
		}
		flush()
		if err := s.Complete(ctx, key, c.Token, keystore.Record{StatusCode: 201}, time.Minute); err != nil {
			t.Fatalf("Complete after SCRIPT FLUSH: %v", err)
		}
		flush()
		if r, err := s.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute); err != nil || r.State != keystore.Completed {
			t.Fatalf("replay after SCRIPT FLUSH: %v %v", r.State, err)
		}
	}
}
