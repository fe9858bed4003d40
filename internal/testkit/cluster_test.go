package testkit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// start starts a cluster for one test and closes it at its end.
func startCluster(t *testing.T) (*testkit.Cluster, *redis.ClusterClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testkit.StartCluster(ctx, testkit.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl := c.Client(redis.ClusterOptions{MaxRedirects: 8})
	t.Cleanup(func() { cl.Close() })
	return c, cl
}

// Slot agrees with the server's CLUSTER KEYSLOT, hash tags included.
func TestSlot(t *testing.T) {
	_, cl := startCluster(t)
	ctx := context.Background()
	for _, k := range []string{"", "a", "foo", "user:{42}:x", "{}x", "{x}{y}", "x{}{y}", "geoidem:{evt-17}", "123456789"} {
		want, err := cl.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := testkit.Slot(k); got != int(want) {
			t.Errorf("Slot(%q) = %d, want %d", k, got, want)
		}
	}
}

// A migrated slot is served by its new master, and its keys, written
// before, are still there.
func TestMigrateSlot(t *testing.T) {
	c, cl := startCluster(t)
	ctx := context.Background()
	const slotKeys = 25
	keys := make([]string, slotKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("{tag}:%d", i)
		if err := cl.Set(ctx, keys[i], i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot := testkit.Slot("tag")
	from, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(masters) != 3 {
		t.Fatalf("masters %v, want 3", masters)
	}
	to := masters[0]
	if to == from {
		to = masters[1]
	}
	moved, err := c.MigrateSlot(ctx, slot, to)
	if err != nil {
		t.Fatal(err)
	}
	if moved != slotKeys {
		t.Errorf("moved %d keys, want %d", moved, slotKeys)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := c.MasterOf(ctx, slot); err != nil || got != to {
		t.Fatalf("slot %d served by %q, %v; want %s (was %s)", slot, got, err, to, from)
	}
	for i, k := range keys {
		if v, err := cl.Get(ctx, k).Int(); err != nil || v != i {
			t.Errorf("GET %s = %d, %v; want %d", k, v, err, i)
		}
	}
	if n, err := c.MigrateSlot(ctx, slot, to); n != 0 || err != nil {
		t.Errorf("migrating to its own master: %d keys, %v", n, err)
	}
}

// Each kind of failover promotes the master's replica, which then serves
// the keys written before.
func TestFailover(t *testing.T) {
	c, cl := startCluster(t)
	ctx := context.Background()
	kill := func(ctx context.Context, m string) (string, error) {
		promoted, err := c.Kill(ctx, m)
		if err != nil {
			return "", err
		}
		if err := c.Restart(ctx, m); err != nil { // it rejoins as a replica
			return "", err
		}
		if r, err := c.ReplicaOf(ctx, promoted); err != nil || r != m {
			return "", fmt.Errorf("restarted %s: the promoted %s's replica is %q, %v", m, promoted, r, err)
		}
		return promoted, nil
	}
	for i, tc := range []struct {
		name string
		do   func(context.Context, string) (string, error)
	}{
		{"planned", func(ctx context.Context, m string) (string, error) { return c.Failover(ctx, m, testkit.Planned) }},
		{"force", func(ctx context.Context, m string) (string, error) { return c.Failover(ctx, m, testkit.Force) }},
		{"takeover", func(ctx context.Context, m string) (string, error) { return c.Failover(ctx, m, testkit.Takeover) }},
		{"kill", kill},
	} {
		key := fmt.Sprintf("{failover}:%d", i)
		if err := cl.Set(ctx, key, tc.name, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReplicated(ctx); err != nil {
			t.Fatal(err)
		}
		slot := testkit.Slot(key)
		old, err := c.MasterOf(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		replica, err := c.ReplicaOf(ctx, old)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		promoted, err := tc.do(ctx, old)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if promoted != replica {
			t.Errorf("%s: promoted %s, want the replica %s", tc.name, promoted, replica)
		}
		if now, err := c.MasterOf(ctx, slot); err != nil || now != replica {
			t.Errorf("%s: slot served by %s, %v; want %s", tc.name, now, err, replica)
		}
		cl.ReloadState(ctx)
		if v, err := cl.Get(ctx, key).Result(); err != nil || v != tc.name {
			t.Errorf("%s: GET after failover = %q, %v", tc.name, v, err)
		}
	}
}

// Many slots migrated one after another leave a cluster whose nodes all
// agree, so that a planned failover right after can win its election, and
// every key is still readable. (Migrations that bump the masters' epochs
// faster than gossip spreads them left nodes disagreeing on a slot for good
// before MigrateSlot waited for every node.)
func TestMigrateManyThenFailover(t *testing.T) {
	c, cl := startCluster(t)
	ctx := context.Background()
	const keys = 60
	for i := range keys {
		if err := cl.Set(ctx, fmt.Sprintf("{k%d}", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		slot := testkit.Slot(fmt.Sprintf("k%d", i))
		from, err := c.MasterOf(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		to := masters[0]
		for j, m := range masters {
			if m == from {
				to = masters[(j+1)%len(masters)]
			}
		}
		if _, err := c.MigrateSlot(ctx, slot, to); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.MasterOf(ctx, testkit.Slot("k0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Failover(ctx, m, testkit.Planned); err != nil {
		t.Fatal(err)
	}
	cl.ReloadState(ctx)
	for i := range keys {
		if v, err := cl.Get(ctx, fmt.Sprintf("{k%d}", i)).Int(); err != nil || v != i {
			t.Errorf("GET {k%d} = %d, %v", i, v, err)
		}
	}
}
