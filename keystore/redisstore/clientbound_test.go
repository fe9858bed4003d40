package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// The store fill of issue 35 on Redis, which had no bound at all: 8
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

// The round trips of a bounded claim: a new key's SET and count go
// together (1); a replay takes its count back (2); a client past its
// bound is answered from one GET, writing nothing (1). On a Cluster the
// pipeline is split by node and sent to both at once.
func TestClientBoundRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
	}{{"Standalone", onStandalone}, {"Cluster", onCluster}} {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client(t)
			h := new(commandCounter)
			client.AddHook(h)
			s := newStore(t, client, client, redisstore.Config{ClientKeys: 12, ClientWindow: time.Hour})
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
			if err := s.Complete(ctx, warm, wtok, encode(keystore.Record{StatusCode: 201}), time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(ctx, warm, args(keystore.NewToken())); err != nil {
				t.Fatal(err)
			}
			var done string
			for i := range 11 {
				key, tok := keystoretest.Key(t), keystore.NewToken()
				want := []string{"set+evalsha"} // one pipeline (split by node inside go-redis on a Cluster)
				expectRoundTrips(t, h, "a bounded new key", want, func() error {
					c, err := s.Claim(ctx, key, args(tok))
					if err == nil && !c.Acquired {
						err = errors.New("not acquired")
					}
					return err
				})
				if i == 0 {
					done = key
					if err := s.Complete(ctx, key, tok, encode(keystore.Record{StatusCode: 201}), time.Hour); err != nil {
						t.Fatal(err)
					}
					expectRoundTrips(t, h, "a bounded replay", []string{"set+evalsha", "evalsha"}, func() error {
						c, err := s.Claim(ctx, key, args(keystore.NewToken()))
						if err == nil && c.State != keystore.Completed {
							err = errors.New("not replayed")
						}
						return err
					})
				}
			}
			expectRoundTrips(t, h, "a new key past the bound", []string{"get"}, func() error {
				_, err := s.Claim(ctx, keystoretest.Key(t), args(keystore.NewToken()))
				var fe *keystore.FullError
				if !errors.As(err, &fe) || !fe.Client {
					return errors.New("not refused: " + fmt.Sprint(err))
				}
				return nil
			})
			expectRoundTrips(t, h, "a replay past the bound", []string{"get"}, func() error {
				c, err := s.Claim(ctx, done, args(keystore.NewToken()))
				if err == nil && c.State != keystore.Completed {
					err = errors.New("not replayed")
				}
				return err
			})
		})
	}
}
