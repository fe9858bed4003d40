package redisstore_test

import (
	"errors"
	"log"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore/redisstore"
)

// New refuses a Redis that keeps nothing across a restart. A test setup
// whose Redis runs without persistence accepts that explicitly; a
// production setup can ask for AOF on every node instead.
func ExampleConfig_durability() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)) // warnings: RDB only, appendfsync no

	store, err := redisstore.New(client, redisstore.Config{Logger: logger})
	if errors.Is(err, redisstore.ErrNotDurable) {
		// A restart would lose every record and claim: every retry after
		// it would run its handler again. Tests may accept that:
		store, err = redisstore.New(client, redisstore.Config{Durability: redisstore.AcceptVolatile})
	}
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("Redis persistence: %q", store.Persistence())

	// Production: AOF (appendfsync always or everysec) on every node, or
	// New fails.
	if _, err := redisstore.New(client, redisstore.Config{Durability: redisstore.RequireAOF, Logger: logger}); err != nil {
		log.Fatal(err)
	}
}
