// This file reads CPU time, user and system together, for the
// benchmarks that compare variants by the work they cost rather than by
// the wall time a shared machine happened to give them: this process's
// (Process), a Redis server's by its own count (Redis), and other local
// processes' from /proc (Pids, Linux only).

package testkit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis returns the CPU time the Redis server behind c has used since it
// started: INFO cpu's used_cpu_user plus used_cpu_sys (of a Cluster
// client, the node that answers).
func RedisCPU(ctx context.Context, c redis.UniversalClient) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var sum float64
	found := 0
	for line := range strings.Lines(info) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("cpustat: INFO cpu: %s: %w", name, err)
		}
		sum += f
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("cpustat: INFO cpu lacks used_cpu_user or used_cpu_sys")
	}
	return time.Duration(sum * float64(time.Second)), nil
}
