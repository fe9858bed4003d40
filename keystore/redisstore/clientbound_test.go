package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// The store fill (a few addresses sending new keys until the store is
// full) on Redis, which had no bound at all: 8
// source addresses each send new keys past their bound; each is held to
// ClientKeys, refused past it with a client FullError (acquiring nothing,
// writing no entry), and a ninth address still claims.
func TestClientKeysBoundEachAddress(t *testing.T) {
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		client := standaloneClient(t)
		cfg.ClientKeys, cfg.ClientWindow = 50, time.Hour
		s := newStore(t, client, client, cfg)
		ctx := context.Background()
		for _, key := range keystoretest.FillClients(t, s, 8, 30) {
			if n, err := client.Exists(ctx, s.RedisKey(key)).Result(); err != nil || n != 0 {
				t.Fatalf("a refused key left an entry in Redis: %d %v", n, err)
			}
		}
		if b := s.ClientBound(); b.Keys != 50 || b.Window != time.Hour {
			t.Fatalf("ClientBound() = %+v", b)
		}
	})
}

// The round trips of a bounded claim. On a standalone Redis one script
// claims and counts: a new key, a replay and a new key past the bound are
// each one round trip. On a Cluster the count lives on another slot: a
// new key is counted after its SET (2), a replay is the SET alone (1),
// and a client past its bound is answered from one GET (1). A replay is
// never counted, on either.
func TestClientBoundRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name           string
		client         func(testing.TB) redis.UniversalClient
		newKey, replay []string
		past           []string
	}{
		{"Standalone", onStandalone, []string{"evalsha"}, []string{"evalsha"}, []string{"evalsha"}},
		{"Cluster", onCluster, []string{"set", "evalsha"}, []string{"set"}, []string{"get"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client(t)
			h := new(commandCounter)
			client.AddHook(h)
			prefix := randomPrefix(t)
			s := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix, ClientKeys: 12, ClientWindow: time.Hour})
			warmScripts(t, s)
			ctx := t.Context()
			args := func(tok keystore.Token) keystore.ClaimArgs {
				return keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: tok, Client: "c"}
			}
			// Warm the count's scripts on the node of c's counter: a new
			// key and a replay of it, unmeasured.
			warm, wtok := keystoretest.Key(t), keystore.NewToken()
			if _, err := s.Claim(ctx, warm, args(wtok)); err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(ctx, warm, wtok, encode(record.Record{StatusCode: 201}), time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(ctx, warm, args(keystore.NewToken())); err != nil {
				t.Fatal(err)
			}
			var done string
			for i := range 11 {
				key, tok := keystoretest.Key(t), keystore.NewToken()
				expectRoundTrips(t, h, "a bounded new key", tc.newKey, func() error {
					c, err := s.Claim(ctx, key, args(tok))
					if err == nil && !c.Acquired {
						err = errors.New("not acquired")
					}
					return err
				})
				if i == 0 {
					done = key
					if err := s.Complete(ctx, key, tok, encode(record.Record{StatusCode: 201}), time.Hour); err != nil {
						t.Fatal(err)
					}
					before := clientCount(t, client, prefix, "c")
					expectRoundTrips(t, h, "a bounded replay", tc.replay, func() error {
						c, err := s.Claim(ctx, key, args(keystore.NewToken()))
						if err == nil && c.State != keystore.Completed {
							err = errors.New("not replayed")
						}
						return err
					})
					if after := clientCount(t, client, prefix, "c"); after != before {
						t.Errorf("a replay changed the client's count from %d to %d", before, after)
					}
				}
			}
			expectRoundTrips(t, h, "a new key past the bound", tc.past, func() error {
				_, err := s.Claim(ctx, keystoretest.Key(t), args(keystore.NewToken()))
				var fe *keystore.FullError
				if !errors.As(err, &fe) || !fe.Client {
					return errors.New("not refused: " + fmt.Sprint(err))
				}
				return nil
			})
			expectRoundTrips(t, h, "a replay past the bound", tc.past, func() error {
				c, err := s.Claim(ctx, done, args(keystore.NewToken()))
				if err == nil && c.State != keystore.Completed {
					err = errors.New("not replayed")
				}
				return err
			})
		})
	}
}

// A replay under a full client bound, on a Store that has not yet seen
// the client past it (another process filled it, say), is answered, and
// leaves the count as it was: at the bound, never past it, and never
// taken and given back.
func TestClientBoundReplayUncounted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
	}{{"Standalone", onStandalone}, {"Cluster", onCluster}} {
		t.Run(tc.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
				client := tc.client(t)
				cfg.KeyPrefix, cfg.ClientKeys, cfg.ClientWindow = randomPrefix(t), 3, time.Hour
				cfg.Durability = redisstore.AcceptVolatile
				filler := newStore(t, client, client, cfg)
				ctx := t.Context()
				args := func(tok keystore.Token) keystore.ClaimArgs {
					return keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: tok, Client: "c"}
				}
				var done string
				for i := range 3 {
					key, tok := keystoretest.Key(t), keystore.NewToken()
					if c, err := filler.Claim(ctx, key, args(tok)); err != nil || !c.Acquired {
						t.Fatalf("claim %d: %+v %v", i, c, err)
					}
					if err := filler.Complete(ctx, key, tok, encode(record.Record{StatusCode: 201}), time.Hour); err != nil {
						t.Fatal(err)
					}
					done = key
				}
				s, err := redisstore.New(client, cfg) // another process: it has seen nothing of c
				if err != nil {
					t.Fatal(err)
				}
				for range 5 {
					c, err := s.Claim(ctx, done, args(keystore.NewToken()))
					if err != nil || c.State != keystore.Completed {
						t.Fatalf("a replay under the full bound: %+v %v; want the record", c, err)
					}
					if n := clientCount(t, client, cfg.KeyPrefix, "c"); n != 3 {
						t.Fatalf("after a replay the client's count is %d, want 3", n)
					}
				}
			})
		})
	}
}

// clientCount reads the count of client's new keys, as the Store keeps it.
func clientCount(t *testing.T, c redis.UniversalClient, prefix, client string) int64 {
	t.Helper()
	n, err := c.Get(t.Context(), prefix+"client:"+client).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return n
}

// One client's new keys claimed at once, from several Stores (processes)
// sharing the prefix: exactly the bound is acquired, on a standalone
// Redis (one script counts and claims) and on a Cluster (the count
// follows the SET, and a key past the bound is given back, keeping its
// count: the client is refused until its window ends either way); every
// other claim is refused with a client FullError.
func TestClientBoundConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
	}{{"Standalone", onStandalone}, {"Cluster", onCluster}} {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client(t)
			cfg := redisstore.Config{KeyPrefix: randomPrefix(t), ClientKeys: 25, ClientWindow: time.Hour, Durability: redisstore.AcceptVolatile}
			stores := []*redisstore.Store{newStore(t, client, client, cfg)}
			for range 2 {
				s, err := redisstore.New(client, cfg)
				if err != nil {
					t.Fatal(err)
				}
				stores = append(stores, s)
			}
			var (
				wg       sync.WaitGroup
				acquired atomic.Int32
				errs     = make(chan error, 90)
			)
			for i := range 90 {
				s := stores[i%len(stores)]
				wg.Go(func() {
					c, err := s.Claim(t.Context(), keystoretest.Key(t), keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: keystore.NewToken(), Client: "c"})
					var fe *keystore.FullError
					switch {
					case err == nil && c.Acquired:
						acquired.Add(1)
					case errors.As(err, &fe) && fe.Client && fe.RetryAfter > 0:
					default:
						errs <- fmt.Errorf("claim: %+v %v", c, err)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			n, count := acquired.Load(), clientCount(t, client, cfg.KeyPrefix, "c")
			if n != 25 || count < 25 || (tc.name == "Standalone" && count != 25) {
				t.Errorf("90 new keys at once, bound 25: %d acquired, count %d; want 25, and a count of 25 (on a Cluster, at least: a key given back keeps its count)", n, count)
			}
		})
	}
}
