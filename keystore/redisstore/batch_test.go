package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// pipeCounter counts the pipelines a client sends and the commands in them.
type pipeCounter struct{ pipes, cmds atomic.Int64 }

func (*pipeCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*pipeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.pipes.Add(1)
		p.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// By default (auto-pipelining), concurrent calls share round trips, and each still
// gets its own outcome.
func TestAutoPipelineBatchesConcurrentCalls(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr})
	t.Cleanup(func() { client.Close() })
	var pc pipeCounter
	client.AddHook(&pc)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := context.Background()
	prefix := keystoretest.Key(t)[:40]
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				key := prefix + strconv.Itoa(g) + "-" + strconv.Itoa(i%25)
				c, err := newClaim(ctx, s, key, keystore.Fingerprint{byte(g)}, time.Minute)
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				switch {
				case c.Acquired:
					if i >= 25 {
						t.Errorf("Claim %d of %s acquired a completed key", i, key)
					}
					if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 200 + g}), time.Hour); err != nil {
						t.Errorf("Complete: %v", err)
					}
					if err := s.Complete(ctx, key, c.Token+1, encode(record.Record{StatusCode: 200}), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
						t.Errorf("Complete by a wrong token: %v", err)
					}
				case c.State == keystore.Completed:
					if testkit.Decoded(c.Record).StatusCode != 200+g || i < 25 {
						t.Errorf("Claim %d of %s: record %d", i, key, testkit.Decoded(c.Record).StatusCode)
					}
				default:
					t.Errorf("Claim %d of %s: %v", i, key, c.State)
				}
			}
		}()
	}
	wg.Wait()
	if pc.pipes.Load() == 0 || pc.cmds.Load() < 2*pc.pipes.Load() {
		t.Errorf("%d pipelines of %d commands: nothing was batched", pc.pipes.Load(), pc.cmds.Load())
	}
	t.Logf("%d pipelines, %.1f commands each", pc.pipes.Load(), float64(pc.cmds.Load())/float64(pc.pipes.Load()))
}

// A call whose command is queued behind busy round trips returns when its
// context ends, and its command is not sent.
func TestAutoPipelineQueuedCallHonoursContext(t *testing.T) {
	srv := privateServer(t)
	admin := privateClient(t, srv)
	client := redis.NewClient(&redis.Options{Addr: srv.addr, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { client.Close() })
	s := newStore(t, client, admin, redisstore.Config{})
	ctx := context.Background()
	// Writes stall (until the CLIENT UNPAUSE below): the first two claims
	// take both round trips.
	if err := admin.Do(ctx, "client", "pause", 60000, "write").Err(); err != nil {
		t.Fatal(err)
	}
	unpause := func() {
		if err := admin.Do(ctx, "client", "unpause").Err(); err != nil {
			t.Errorf("CLIENT UNPAUSE: %v", err)
		}
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := newClaim(ctx, s, "busy-"+strconv.Itoa(i), keystore.Fingerprint{}, time.Minute); err != nil {
				t.Errorf("busy Claim: %v", err)
			}
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); redisstore.RoundTripsInFlight(s) < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			unpause()
			t.Fatalf("the two busy claims were not on their way after 30s")
		}
	}
	qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newClaim(qctx, s, "queued", keystore.Fingerprint{}, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("queued Claim: %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("queued Claim returned after %v, its context ended after 100ms", d)
	}
	unpause()
	wg.Wait()
	if n, err := admin.Exists(ctx, s.RedisKey("queued")).Result(); err != nil || n != 0 {
		t.Errorf("the abandoned claim was sent: EXISTS %d %v", n, err)
	}
}
