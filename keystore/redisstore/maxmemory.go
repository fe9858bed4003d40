package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SuggestedMaxMemory returns a Config.MaxMemory for the server c reaches,
// and the server's maxmemory it is drawn from: nine tenths of maxmemory
// (on a Cluster or a Ring, of the smallest of its masters'), so that new
// keys are refused 503 store-full while a tenth is left for what arrives
// between the Store's samples (a second's writes of every process) and
// before Redis's own maxmemory refuses every write or evicts records. It
// returns 0, 0 when the server sets no maxmemory: nothing bounds the
// server then but the host's memory, and no fraction of it can be told
// apart from what else the host runs, so the caller decides (a service
// says so at startup). It reads INFO memory, which managed services that
// refuse CONFIG allow.
func SuggestedMaxMemory(ctx context.Context, c redis.UniversalClient) (suggested, maxmemory int64, err error) {
	maxmemory, err = forEachMaster(ctx, c, serverMaxMemory, func(a, b int64) int64 {
		switch {
		case a == 0:
			return b
		case b == 0:
			return a
		}
		return min(a, b)
	})
	if err != nil || maxmemory <= 0 {
		return 0, 0, err
	}
	return maxmemory / 10 * 9, maxmemory, nil
}

// serverMaxMemory reads maxmemory from INFO memory: 0 when not set.
func serverMaxMemory(ctx context.Context, c redis.Cmdable) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "maxmemory:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errNoMaxMemory
}

var errNoMaxMemory = errors.New("redisstore: INFO memory has no maxmemory")
