package main

import (
	"context"

	"github.com/geoidem/geoidem/internal/testkit"
)

// startRedis starts the harness's own redis-server (-restart-redis) on a
// spare loopback port, without persistence (no RDB snapshot, no AOF): a
// restart loses every key. With aof (-redis-aof) it runs with appendonly
// yes and appendfsync always, so a restart reloads every write it
// acknowledged. On Linux it gets SIGKILL when the harness dies.
func startRedis(ctx context.Context, aof bool) (*testkit.RedisServer, error) {
	var o testkit.RedisOptions
	if aof {
		o.AppendFsync = "always"
	}
	return testkit.StartRedis(ctx, o)
}
