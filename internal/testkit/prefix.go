// This file deletes every Redis key under a prefix: how the
// module's tests, examples and benchmarks clean up the key prefix of their
// own that each uses on a shared Redis, Valkey or Redis Cluster.

package testkit

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// batch is how many keys one pipeline unlinks.
const batch = 1000

// Delete unlinks every key whose name starts with prefix, on every master
// of a Cluster (SCAN reaches one node's keys) or on c's single server. A
// key is unlinked by a command of its own, so that a Cluster node never
// meets keys of several slots in one command.
func DeletePrefix(ctx context.Context, c redis.UniversalClient, prefix string) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return deleteOn(ctx, node, prefix)
		})
	}
	return deleteOn(ctx, c, prefix)
}

// deleteOn deletes the keys under prefix that one server holds.
func deleteOn(ctx context.Context, c redis.Cmdable, prefix string) error {
	iter := c.Scan(ctx, 0, prefix+"*", batch).Iterator()
	keys := make([]string, 0, batch)
	unlink := func() error {
		if len(keys) == 0 {
			return nil
		}
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Unlink(ctx, k)
			}
			return nil
		})
		keys = keys[:0]
		return err
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == batch {
			if err := unlink(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return unlink()
}
