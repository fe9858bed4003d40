package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// TestSuggestedMaxMemory checks the bound suggested for a server with a
// maxmemory (nine tenths of it) and for one without (none, 0).
func TestSuggestedMaxMemory(t *testing.T) {
	for _, c := range []struct {
		name      string
		args      []string
		maxmemory int64
	}{
		{"maxmemory 100mb", []string{"--maxmemory", "100mb"}, 100 << 20},
		{"no maxmemory", []string{"--maxmemory", "0"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := testkit.StartRedis(t.Context(), testkit.RedisOptions{Args: c.args})
			if err != nil {
				t.Fatalf("starting redis-server: %v", err)
			}
			t.Cleanup(srv.Stop)
			client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { client.Close() })
			suggested, maxmemory, err := redisstore.SuggestedMaxMemory(t.Context(), client)
			if err != nil {
				t.Fatal(err)
			}
			if maxmemory != c.maxmemory || suggested != c.maxmemory/10*9 {
				t.Errorf("SuggestedMaxMemory = %d, %d; want %d, %d", suggested, maxmemory, c.maxmemory/10*9, c.maxmemory)
			}
		})
	}
}
