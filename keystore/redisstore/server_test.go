package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
)

// This file starts private redis-server processes on free loopback ports
// (internal/testkit StartRedis): single servers for tests that must not disturb
// the shared Redis at 127.0.0.1:6379 (SCRIPT FLUSH, replication), and one
// three-master Cluster shared by every cluster test of a `go test` run.
// Every process gets SIGKILL when the test binary dies (Pdeathsig), so none
// outlives the run even if a test panics or times out.

func TestMain(m *testing.M) {
	code := m.Run()
	stopCluster()
	os.Exit(code)
}

// redisServer is a redis-server process started by a test.
type redisServer struct {
	*testkit.RedisServer
	addr string // RedisServer.Addr(), under the name the tests use
}

// startServer starts redis-server in dir on a free loopback port, with
// extra arguments after --save "" --appendonly no, and waits until it
// answers PING. It retries on another port when the chosen one was taken
// in the meantime. An empty dir is a temporary one of the server's own,
// removed by Stop.
func startServer(dir string, extra ...string) (*redisServer, error) {
	s, err := testkit.StartRedis(context.Background(), testkit.RedisOptions{Dir: dir, Args: extra})
	if err != nil {
		return nil, err
	}
	return &redisServer{RedisServer: s, addr: s.Addr()}, nil
}

// privateValkey starts a valkey-server for one test, in a temporary
// directory, with o's persistence and arguments; stopped in t.Cleanup.
func privateValkey(t testing.TB, o testkit.RedisOptions) *redisServer {
	t.Helper()
	o.Program, o.Dir = "valkey-server", t.TempDir()
	s, err := testkit.StartRedis(context.Background(), o)
	if err != nil {
		t.Fatalf("private Valkey: %v", err)
	}
	t.Cleanup(s.Stop)
	return &redisServer{RedisServer: s, addr: s.Addr()}
}

// privateServer starts a redis-server for one test, stopped in t.Cleanup.
func privateServer(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	dir := t.TempDir()
	s, err := startServer(dir, extra...)
	if err != nil {
		t.Fatalf("private Redis: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// The cluster shared by the cluster tests of this run.
var cluster struct {
	once    sync.Once
	servers []*redisServer
	err     error
}

// clusterAddrs returns the addresses of the three masters of a Redis Cluster
// started for this test run (once, on first use; stopped by TestMain).
func clusterAddrs(t testing.TB) []string {
	t.Helper()
	cluster.once.Do(func() { cluster.err = startCluster() })
	if cluster.err != nil {
		t.Fatalf("Redis Cluster: %v", cluster.err)
	}
	addrs := make([]string, len(cluster.servers))
	for i, s := range cluster.servers {
		addrs[i] = s.addr
	}
	return addrs
}

func startCluster() error {
	for range 3 {
		s, err := startServer("", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		if err != nil {
			return err
		}
		cluster.servers = append(cluster.servers, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range cluster.servers {
		args = append(args, s.addr)
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range cluster.servers {
		c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return fmt.Errorf("node %s not in cluster_state:ok after 20s: %v %q", s.addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return nil
}

func stopCluster() {
	for _, s := range cluster.servers {
		s.Stop()
	}
}
