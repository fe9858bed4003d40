package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file starts private redis-server processes on free loopback ports:
// single servers for tests that must not disturb the shared Redis at
// 127.0.0.1:6379 (SCRIPT FLUSH, replication), and one three-master Cluster
// shared by every cluster test of a `go test` run. Every process gets
// SIGKILL when the test binary dies (Pdeathsig), so none outlives the run
// even if a test panics or times out.

func TestMain(m *testing.M) {
	code := m.Run()
	stopCluster()
	os.Exit(code)
}

// redisServer is a redis-server process started by a test.
type redisServer struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// freePort returns a loopback port that is free, and whose cluster bus port
// (port+10000) is free too, at the time of the call.
func freePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("no free loopback port pair (port, port+10000) found in 50 tries")
}

// startServer starts redis-server in dir on a free loopback port, with
// extra arguments, and waits until it answers PING. It retries on another
// port when the chosen one was taken in the meantime.
func startServer(dir string, extra ...string) (*redisServer, error) {
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := startServerOn(dir, port, extra...)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startServerOn(dir string, port int, extra ...string) (*redisServer, error) {
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	}, extra...)
	cmd := exec.Command("redis-server", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	s := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			return nil, fmt.Errorf("redis-server on port %d exited: %s %s", port, out.String(), tail(log))
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on port %d does not answer PING: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// stop kills the server and waits for it to exit.
func (s *redisServer) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// privateServer starts a redis-server for one test, stopped in t.Cleanup.
func privateServer(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	dir := t.TempDir()
	s, err := startServer(dir, extra...)
	if err != nil {
		t.Fatalf("private Redis: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

// The cluster shared by the cluster tests of this run.
var cluster struct {
	once    sync.Once
	servers []*redisServer
	dirs    []string
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
		dir, err := os.MkdirTemp("", "redisstore-cluster-")
		if err != nil {
			return err
		}
		cluster.dirs = append(cluster.dirs, dir)
		s, err := startServer(dir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
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
		s.stop()
	}
	for _, d := range cluster.dirs {
		os.RemoveAll(d)
	}
}
