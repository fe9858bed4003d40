package redisstore_test

import (
	"log"
	"net/http"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// The store the middleware of several replicas shares (compiled, not run:
// it needs a server). docs/stores.md's "Several replicas" quotes this example
// from `rdb :=` to the error check; keep the two in step.
func ExampleNew_middleware() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		ContextTimeoutEnabled: true,
		// go-redis 9.16+ otherwise logs a handshake error on every server
		// that does not know maintenance notifications (Redis 7 and
		// Valkey 8 do not).
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	store, err := redisstore.New(rdb, redisstore.Config{}) // or a redis.NewClusterClient(…)
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()

	idem, err := middleware.New(store, middleware.Config{})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("POST /features", idem.Handler(http.NotFoundHandler())) // your handler
}
