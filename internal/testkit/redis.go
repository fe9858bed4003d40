// This file starts private redis-server processes on free
// loopback ports, for the tests that must not disturb the shared Redis
// (SCRIPT FLUSH, replication, a restart), the chaos harness and the
// benchmarks. [StartRedis] waits until the server answers PING; [RedisServer.Kill]
// SIGKILLs it, [RedisServer.Restart] starts it again on the same port and in the
// same directory, and [RedisServer.Stop] kills it for good and removes the
// temporary directory it made. On Linux every server gets SIGKILL when the
// process that started it dies (Pdeathsig), so none outlives a test binary
// that panics or times out.
//
// A server runs without persistence (no RDB save points, no append-only
// file) unless [RedisOptions] asks for it, so a restart of such a server starts
// empty: what a Redis without persistence looks like to its clients after a
// crash. (A replica is the exception: it keeps the RDB file of its last
// full synchronization in its directory, and loads it when it starts.)
//
// The package needs redis-server on PATH; without it [Start] fails with an
// error wrapping [ErrNotInstalled]. A test where Redis is part of the
// environment should fail on that error, not skip. [RedisOptions.Program] runs
// another server that takes redis-server's arguments: valkey-server.

package testkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// ErrNotInstalled is the error, wrapped, of [Start] and [LookPath] when
// the server program (redis-server, or [RedisOptions.Program]) is not on PATH.
var ErrNotInstalled = errors.New("redisserver: server program not on PATH (scripts/services installs Redis 7 and Valkey 8)")

// LookPath returns the path of the redis-server that [Start] runs, or an
// error wrapping [ErrNotInstalled].
func LookPath() (string, error) { return lookPath("redis-server") }

func lookPath(program string) (string, error) {
	p, err := exec.LookPath(program)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrNotInstalled, program, err)
	}
	return p, nil
}

// RedisOptions configures a server. The zero value is a redis-server without
// persistence in a temporary directory of its own.
type RedisOptions struct {
	// Program is the server to run, looked up on PATH: "valkey-server"
	// for Valkey (scripts/services installs Valkey 8). Empty:
	// "redis-server".
	Program string
	// Dir is the server's working directory (--dir): its log, and whatever
	// it persists (RDB, AOF, nodes.conf). The caller owns it. Empty: a
	// temporary directory of the server's own, removed by Stop. Either way
	// every restart runs in the same directory, so it loads what the server
	// persisted there.
	Dir string
	// AppendFsync runs the server with appendonly yes and this appendfsync
	// policy ("always", "everysec" or "no"). Empty: appendonly no.
	AppendFsync string
	// Args are further redis-server arguments, after the defaults
	// (--save "" and appendonly as AppendFsync says), which they may
	// override: "--maxmemory-policy", "volatile-lru"; "--replicaof", host,
	// port; "--cluster-enabled", "yes" (the port's cluster bus port,
	// port+10000, is free too when Start picks the port).
	Args []string
}

// program is the server Start runs.
func (o RedisOptions) program() string {
	if o.Program == "" {
		return "redis-server"
	}
	return o.Program
}

// RedisServer is a redis-server process started by [Start]. Its methods are not
// safe for concurrent use.
type RedisServer struct {
	port    int
	addr    string
	dir     string
	ownDir  bool // dir is a temporary directory of the server's own
	opts    RedisOptions
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	running bool
}

// Start starts redis-server on a free loopback port and waits until it
// answers PING. It tries another port when the chosen one was taken in the
// meantime.
func StartRedis(ctx context.Context, o RedisOptions) (*RedisServer, error) {
	if _, err := lookPath(o.program()); err != nil {
		return nil, err
	}
	errs := []error{errors.New("redisserver: no spare port in 5 tries")}
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &RedisServer{port: port, addr: "127.0.0.1:" + strconv.Itoa(port), dir: o.Dir, opts: o}
		if s.dir == "" {
			if s.dir, err = os.MkdirTemp("", "geoidem-redis-"); err != nil {
				return nil, err
			}
			s.ownDir = true
		}
		if err := s.start(ctx, o.Args); err != nil {
			s.Stop()
			if ctx.Err() != nil {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		return s, nil
	}
	return nil, errors.Join(errs...)
}

// Addr is the server's address, 127.0.0.1:port.
func (s *RedisServer) Addr() string { return s.addr }

// Dir is the server's working directory.
func (s *RedisServer) Dir() string { return s.dir }

// Kill SIGKILLs the server and waits for it to exit, keeping its files. It
// does nothing when the server is not running.
func (s *RedisServer) Kill() {
	if !s.running {
		return
	}
	_ = s.cmd.Process.Kill() // SIGKILL
	<-s.done
	s.running = false
}

// Restart SIGKILLs the server (unless it is not running) and starts it
// again on the same port and in the same directory, with [RedisOptions.Args]
// followed by args, once the port is free again; it waits until the server
// answers PING.
func (s *RedisServer) Restart(ctx context.Context, args ...string) error {
	s.Kill()
	all := append(append([]string{}, s.opts.Args...), args...)
	var err error
	for range 20 { // the port may take a moment to be free again
		if err = s.start(ctx, all); err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
	return err
}

// Stop kills the server, waits for it to exit and removes its directory if
// it is a temporary one of its own.
func (s *RedisServer) Stop() {
	s.Kill()
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
}

// start runs redis-server on s.port in s.dir with args after the defaults,
// and waits until it answers PING.
func (s *RedisServer) start(ctx context.Context, args []string) error {
	persistence := []string{"--appendonly", "no"}
	if s.opts.AppendFsync != "" {
		persistence = []string{"--appendonly", "yes", "--appendfsync", s.opts.AppendFsync}
	}
	all := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir, "--save", ""}, persistence...)
	all = append(all, args...)
	all = append(all, "--daemonize", "no", "--logfile", filepath.Join(s.dir, "redis.log"))
	cmd := exec.Command(s.opts.program(), all...)
	dieWithParent(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%w: %w", ErrNotInstalled, err)
		}
		return fmt.Errorf("redisserver: start %s: %w", s.opts.program(), err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done, s.running = cmd, done, true
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := ping(ctx, s.addr)
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.running = false
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redisserver: %s on port %d exited: %s %s", s.opts.program(), s.port, out.String(), tail(log))
		default:
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redisserver: %s on port %d does not answer PING: %w", s.opts.program(), s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail is the end of a server's log, for an error message.
func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
