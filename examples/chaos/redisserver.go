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
// restart loses every key. With aof (-redis-aof) it runs with appendonly
// yes and appendfsync always in one directory kept across restarts, so a
// restart reloads every write it acknowledged. On Linux it gets SIGKILL
// when the harness dies.
type redisServer struct {
	port int
	addr string
	aof  bool
	dir  string   // with aof: the directory of every start, removed by stop
	args []string // further redis-server arguments (a replica's --replicaof)
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// startRedis starts a redis-server on a spare loopback port.
func startRedis(aof bool, args ...string) (*redisServer, error) {
	errs := []error{errors.New("no spare port in 5 tries")}
	for range 5 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		s := &redisServer{port: port, addr: "127.0.0.1:" + strconv.Itoa(port), aof: aof, args: args}
		if aof {
			if s.dir, err = os.MkdirTemp("", "geoidem-chaos-redis-aof-"); err != nil {
				return nil, err
			}
		}
		if err := s.start(); err != nil {
			if aof {
				os.RemoveAll(s.dir)
			}
			errs = append(errs, err)
			continue
		}
		return s, nil
	}
	return nil, errors.Join(errs...)
}

// start runs redis-server on s.port, in a fresh empty directory (with aof:
// in s.dir), and waits until it answers PING.
func (s *redisServer) start() error {
	dir, keep := s.dir, s.aof
	if !keep {
		var err error
		if dir, err = os.MkdirTemp("", "geoidem-chaos-redis-"); err != nil {
			return err
		}
	}
	persistence := []string{"--appendonly", "no"}
	if s.aof {
		persistence = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""}, persistence...)
	args = append(args, s.args...)
	cmd := exec.Command("redis-server", append(args, "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))...)
	dieWithParent(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		if !keep {
			os.RemoveAll(dir)
		}
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		if !keep {
			os.RemoveAll(dir)
		}
		close(done)
	}()
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
			s.kill()
			return fmt.Errorf("redis-server on port %d does not answer PING: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server, waits for it to exit and removes its files.
func (s *redisServer) stop() {
	s.kill()
	if s.aof {
		os.RemoveAll(s.dir)
	}
}

// kill kills the server and waits for it to exit, keeping an aof
// server's files.
func (s *redisServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// restart SIGKILLs the server and starts it again on the same port: empty,
// what a Redis without persistence looks like to its clients after a
// crash, or, with aof, on the files it wrote.
func (s *redisServer) restart(context.Context) error {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	return s.startAgain()
}

// startAgain starts the server again on its port, once that is free.
func (s *redisServer) startAgain() error {
	var err error
	for range 20 { // the port may take a moment to be free again
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
