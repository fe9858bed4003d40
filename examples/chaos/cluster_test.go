package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
)

// startCluster starts a Redis Cluster of three masters without replicas,
// redis-servers of the test's own without persistence, and returns its
// store URL, redis://a,b,c/0.
func startCluster(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var addrs []string
	for range 3 {
		s, err := testkit.StartRedis(ctx, testkit.RedisOptions{Args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}})
		if err != nil {
			t.Fatalf("redis-server for the cluster: %v", err)
		}
		t.Cleanup(s.Stop)
		addrs = append(addrs, s.Addr())
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			select {
			case <-ctx.Done():
				c.Close()
				t.Fatalf("node %s: no cluster_state:ok in time (%v)", a, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
		c.Close()
	}
	return "redis://" + strings.Join(addrs, ",") + "/0"
}

// TestReplicasRedisCluster runs three replicas on a Redis Cluster: each
// key's data on its own slot, claims and completions routed by the
// cluster client, no event run twice, none lost.
func TestReplicasRedisCluster(t *testing.T) {
	t.Parallel()
	rows := runChaos(t, "-store", startCluster(t), "-receivers", "3", "-events", replicaEvents)
	replicaRows(t, rows, 3)
}
