package testkit_test

import (
	"context"
	"testing"
)

// A master killed and restarted rejoins as its successor's replica, and
// once Restart returns the successor lists it as an online replica: its
// replica's link was up while the successor still waited to start the
// sync (state=wait_bgsave), which ReplicaOf does not count.
func TestRestartedMasterIsAnOnlineReplica(t *testing.T) {
	c, _ := startCluster(t)
	ctx := context.Background()
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := masters[0]
	for i := range 4 {
		promoted, err := c.Kill(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, m); err != nil {
			t.Fatal(err)
		}
		if r, err := c.ReplicaOf(ctx, promoted); err != nil || r != m {
			t.Fatalf("cycle %d: restarted %s, the replica of %s is %q, %v; want %s", i, m, promoted, r, err, m)
		}
		m = promoted
	}
}
