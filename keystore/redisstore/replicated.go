package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// With Config.WaitReplicas, every write whose loss in a failover would
// break the store's promise waits for the replicas before it reports
// success: a Claim that acquires a key (claimReplicated), a Complete (a
// record acknowledged to its sender and found missing on the promoted
// replica would let the retry run the handler again) and an Extend (a
// lease the holder counts on and the promoted replica does not have would
// let a retry run beside the handler). A Release does not wait: losing
// one only keeps the key in flight until its lease ends, after which the
// retry runs, as the release meant it to.

// masterNode returns the client of rkey's master: the store's own client
// on one server (standalone, Sentinel), the key's master's on a Cluster.
func (s *Store) masterNode(ctx context.Context, rkey string) (*redis.Client, error) {
	switch c := s.client.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, rkey)
	}
	return nil, fmt.Errorf("redisstore: WaitReplicas with a %T", s.client) // New refuses it
}

// runReplicated runs script with e's arguments on one connection to
// rkey's master and, when its reply n is one that wrote (wrote(n)), then
// WAIT on the same connection, since WAIT counts the replicas that
// acknowledged that connection's writes: two round trips, never batched.
// It fails with an error wrapping ErrNotReplicated when fewer than
// Config.WaitReplicas replicas acknowledged within Config.WaitTimeout; the
// write has then been applied on the master, and a repeated call by the
// same token changes nothing and waits again (see rewrite). op names the
// operation in errors.
func (s *Store) runReplicated(ctx context.Context, op, rkey string, script luaScript, e *evalArgs, wrote func(n int64) bool) (int64, error) {
	node, err := s.masterNode(ctx, rkey)
	if err != nil {
		return 0, opError(ctx, op, err)
	}
	conn := node.Conn()
	defer conn.Close()
	cmd := redis.NewCmd(ctx, e.args()...)
	_ = conn.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// EVAL caches the script on the node for the next EVALSHA.
		cmd = redis.NewCmd(ctx, append([]any{"eval", script.src}, e.args()[2:]...)...)
		_ = conn.Process(ctx, cmd)
	}
	n, err := cmd.Int64()
	if err != nil {
		s.redirected(err)
		return 0, opError(ctx, op, err)
	}
	if !wrote(n) {
		return n, nil
	}
	acks, err := conn.Wait(ctx, s.waitReplicas, s.waitTimeout).Result()
	if err != nil {
		return 0, opError(ctx, op+": wait for replicas", err)
	}
	if acks < int64(s.waitReplicas) {
		return 0, fmt.Errorf("redisstore: %s: %w: %d of %d acknowledged within %v", op, ErrNotReplicated, acks, s.waitReplicas, s.waitTimeout)
	}
	return n, nil
}

// redirected makes a Cluster client reload its slot map when err is a
// redirection (MOVED, ASK) met on a connection to one node, which go-redis
// does not follow there: the next call then asks for the key's new master.
func (s *Store) redirected(err error) {
	if cc, ok := s.client.(*redis.ClusterClient); ok && (redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")) {
		cc.ReloadState(context.Background())
	}
}
