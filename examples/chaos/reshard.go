package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
)

// maxReshardSlots bounds the slots one -reshard migrates.
const maxReshardSlots = 200

// startReshardCluster starts the Redis Cluster of -reshard: three masters
// with a replica each, redis-servers of the harness's own without
// persistence (internal/testkit's Cluster), and returns it with its store URL.
func startReshardCluster(ctx context.Context) (*testkit.Cluster, string, error) {
	cl, err := testkit.StartCluster(ctx, testkit.ClusterOptions{})
	if err != nil {
		return nil, "", err
	}
	return cl, "redis://" + strings.Join(cl.Addrs(), ",") + "/0", nil
}

// withReshard adds the resharding to fs, at a third of the deliveries: the
// slots of every key under the run's prefix (records, claims, features),
// each migrated to the next master, one after another, by
// testkit.Cluster.MigrateSlot, which waits before each slot's last
// step until its target knows every master's configEpoch.
func withReshard(fs []storeFault, cl *testkit.Cluster, st *storeSetup, rep *report, deliveries int) []storeFault {
	if cl == nil {
		return fs
	}
	fs = append(fs, storeFault{name: "reshard", at: deliveries / 3, do: func(ctx context.Context) error {
		slots, err := liveSlots(ctx, cl, st.cfg.RedisPrefix)
		if err != nil {
			return err
		}
		masters, err := cl.Masters(ctx)
		if err != nil {
			return err
		}
		reclaims := cl.Reclaims
		for _, s := range slots {
			from, err := cl.MasterOf(ctx, s)
			if err != nil {
				return err
			}
			to := masters[(slices.Index(masters, from)+1)%len(masters)]
			n, err := cl.MigrateSlot(ctx, s, to)
			if err != nil {
				return fmt.Errorf("migrating slot %d: %w", s, err)
			}
			rep.slotsMoved++
			rep.keysMoved += n
		}
		rep.reclaims += cl.Reclaims - reclaims
		return nil
	}})
	slices.SortStableFunc(fs, func(a, b storeFault) int { return a.at - b.at })
	return fs
}

// liveSlots returns the slots of the keys under prefix, on every master,
// in a seeded-free order (sorted), at most maxReshardSlots.
func liveSlots(ctx context.Context, cl *testkit.Cluster, prefix string) ([]int, error) {
	masters, err := cl.Masters(ctx)
	if err != nil {
		return nil, err
	}
	var slots []int
	for _, m := range masters {
		c := redis.NewClient(&redis.Options{Addr: m})
		iter := c.Scan(ctx, 0, escapeGlob(prefix)+"*", 500).Iterator()
		for iter.Next(ctx) {
			if s := testkit.Slot(iter.Val()); !slices.Contains(slots, s) {
				slots = append(slots, s)
			}
		}
		err := iter.Err()
		c.Close()
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(slots)
	return slots[:min(len(slots), maxReshardSlots)], nil
}
