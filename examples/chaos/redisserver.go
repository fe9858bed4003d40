package main

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
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server of the harness's own (-restart-redis), on a
// spare loopback port, without persistence (no RDB snapshot, no AOF): a
// restart loses every key. On Linux it gets SIGKILL when the harness dies.
type redisServer struct {
	port int
	addr string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// startRedis starts a redis-server on a spare loopback port.
func startRedis() (*redisServer, error) {
	errs := []error{errors.New("no spare port in 5 tries")}
	for range 5 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		s := &redisServer{port: port, addr: "127.0.0.1:" + strconv.Itoa(port)}
		if err := s.start(); err != nil {
			errs = append(errs, err)
			continue
		}
		return s, nil
	}
	return nil, errors.Join(errs...)
}

// start runs redis-server on s.port, in a fresh empty directory, and waits
// until it answers PING.
func (s *redisServer) start() error {
	dir, err := os.MkdirTemp("", "geoidem-chaos-redis-")
	if err != nil {
		return err
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))
	dieWithParent(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); os.RemoveAll(dir); close(done) }()
	s.cmd, s.done = cmd, done
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("redis-server on port %d does not answer PING: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server and waits for it to exit.
func (s *redisServer) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// restart SIGKILLs the server and starts an empty one on the same port: what
// a Redis without persistence looks like to its clients after a crash.
func (s *redisServer) restart(context.Context) error {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	var err error
	for range 20 { // the port may take a moment to be free again
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
