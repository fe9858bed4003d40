package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
)

// replStall is how long -failover stalls replication before it kills the
// primary: the writes of that second never reach the replica.
const replStall = time.Second

// noSyncDelay makes a primary start a replica's full synchronization at
// once rather than after the default 5 s (repl-diskless-sync-delay), so
// that a fresh or rejoining replica is in sync within a moment.
var noSyncDelay = []string{"--repl-diskless-sync-delay", "0"}

// failover is -failover's set-up: a primary and a replica, redis-servers of
// the harness's own without persistence, the replica replicating through a
// testkit.Cutter proxy (so that replication can stall), and the receiver connected
// through another (front), which the failover points at the promoted
// replica: what a Sentinel or a DNS switch gives the clients.
type failover struct {
	primary, replica *testkit.RedisServer
	repl, front      *testkit.Cutter
}

func startFailover(ctx context.Context) (_ *failover, err error) {
	f := &failover{}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	if f.primary, err = testkit.StartRedis(ctx, testkit.RedisOptions{Args: noSyncDelay}); err != nil {
		return nil, fmt.Errorf("primary: %w", err)
	}
	if f.repl, err = testkit.NewCutter(f.primary.Addr()); err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(f.repl.Addr())
	if f.replica, err = testkit.StartRedis(ctx, testkit.RedisOptions{Args: append([]string{"--replicaof", host, port}, noSyncDelay...)}); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if err := waitReplicating(ctx, f.replica.Addr()); err != nil {
		return nil, err
	}
	if f.front, err = testkit.NewCutter(f.primary.Addr()); err != nil {
		return nil, err
	}
	return f, nil
}

// waitReplicating waits until the replica at addr has synchronized with
// its primary.
func waitReplicating(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s not in sync after 10 s: %v %q", addr, err, info)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// run is the fault: replication stalls for replStall under load, the
// primary is SIGKILLed, the replica promoted (REPLICAOF NO ONE), the
// receiver's path pointed at it, and the old primary restarted, empty, as
// the new primary's replica.
func (f *failover) run(ctx context.Context) error {
	f.repl.Stall()
	t := time.NewTimer(replStall)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
	f.primary.Kill()
	c := redis.NewClient(&redis.Options{Addr: f.replica.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("promote the replica: %w", err)
	}
	if err := f.front.Retarget(f.replica.Addr()); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(f.replica.Addr())
	return f.primary.Restart(ctx, "--replicaof", host, port) // after Options.Args: noSyncDelay
}

func (f *failover) stop() {
	for _, p := range []*testkit.Cutter{f.front, f.repl} {
		if p != nil {
			p.Close()
		}
	}
	for _, s := range []*testkit.RedisServer{f.primary, f.replica} {
		if s != nil {
			s.Stop()
		}
	}
}
