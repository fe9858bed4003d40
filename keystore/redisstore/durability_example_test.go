package redisstore_test

import (
	"log"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore/redisstore"
)

// By default New refuses a Redis that keeps nothing across a restart and
// warns (through Logger) about one that keeps only RDB snapshots or uses
// appendfsync no. RequireAOF refuses all but AOF with appendfsync always or
// everysec, on every node.
func ExampleConfig_durability() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	store, err := redisstore.New(client, redisstore.Config{Durability: redisstore.RequireAOF, Logger: logger})
	if err != nil {
		log.Fatal(err) // wraps redisstore.ErrNotDurable, naming the node and its persistence
	}
	_ = store // every record it completes survives a restart of any node
}

// A test whose Redis runs without persistence accepts, explicitly, that a
// restart of that Redis loses every record and claim, so that every retry
// after it runs its handler again.
func ExampleConfig_acceptVolatile() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{KeyPrefix: "test:", Durability: redisstore.AcceptVolatile})
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}
