package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// A store on one Redis server (the examples need a server, so they are
// compiled but not run). Short client timeouts, a context deadline that
// go-redis honours, and no go-redis retries make an unreachable Redis fail
// fast: the middleware then answers 503 and runs nothing.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		DialTimeout:           200 * time.Millisecond,
		ReadTimeout:           200 * time.Millisecond,
		WriteTimeout:          200 * time.Millisecond,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{KeyPrefix: "ingest:"})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	key := "3f2a…" // the middleware passes a SHA-256 hex digest
	// The caller chooses the claim's token, so that it can release a
	// claim whose outcome it does not know.
	token := keystore.NewToken()
	claim, err := store.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{}, Lease: 30 * time.Second, Token: token})
	if err != nil {
		// Redis unreachable or slow: answer 503. The claim may have been
		// applied all the same (its reply lost): release it by its token,
		// which also fences a claim still on its way.
		_ = store.Release(context.WithoutCancel(ctx), key, token)
		log.Fatal(err)
	}
	switch {
	case claim.Acquired:
		// ... run the handler, then record its response: to the store,
		// opaque bytes (the middleware's encoding of the response).
		var rec []byte
		if err := store.Complete(ctx, key, token, rec, 24*time.Hour); errors.Is(err, keystore.ErrLeaseLost) {
			log.Print("lease lost: another request took the key over; nothing was overwritten")
		}
	case claim.State == keystore.InFlight:
		fmt.Printf("in flight for another %v: answer 409\n", claim.LeaseRemaining)
	case claim.State == keystore.Completed:
		fmt.Printf("replay the %d bytes recorded\n", len(claim.Record))
	}
}

// The same store on a Redis Cluster: every key's data lives on its own
// slot, so the store needs nothing else.
func ExampleNew_cluster() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		ReadTimeout:           200 * time.Millisecond,
		WriteTimeout:          200 * time.Millisecond,
		ContextTimeoutEnabled: true,
	})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_ = store // pass it to middleware.New
}

// A store that admits a request only once a replica has acknowledged its
// claim, and reports a record (or an extended lease) written only once a
// replica has it, so that a failover right after either cannot lose it
// (at the cost of a second round trip on every first delivery, record and
// extension).
func ExampleNew_waitReplicas() {
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "ingest",
		SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
	})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	_, err = store.Claim(context.Background(), "key", keystore.ClaimArgs{Lease: 30 * time.Second, Token: keystore.NewToken()})
	if errors.Is(err, redisstore.ErrNotReplicated) {
		log.Print("no replica acknowledged in time: answer 503, the sender retries")
	}
}
