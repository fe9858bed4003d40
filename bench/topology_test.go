package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/rediscluster"
)

// One Redis Cluster row of section 11, chosen by $GEOIDEM_TOPO_EVENT
// (migrate, failover or kill; default failover), at a small size: every
// event acknowledged or dead-lettered, and, for a planned failover (or a
// migration: see TestMigrationLosesNoRecord), nothing run twice, nothing
// lost, no dead letter.
func TestTopologyRedis(t *testing.T) {
	o := tinyOptions(t)
	o.topoEvents, o.topoSenders, o.topoSpan = 120, 8, 4*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	event := os.Getenv("GEOIDEM_TOPO_EVENT")
	if event == "" {
		event = "failover"
	}
	cl, err := rediscluster.Start(ctx, rediscluster.Options{AppendFsync: "everysec"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, c := range topoCases() {
		if c.store != "redis" || c.event != event {
			continue
		}
		run := redisRun(&o, cl, c, 1, "topotest-"+c.event+"-"+string(rune('0'+c.wait))+":")
		r, err := runTopo(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, WaitReplicas %d: %+v", c.name, c.wait, r)
		if c.exact && (r.twice > 0 || r.lost > 0 || r.dead > 0) {
			t.Errorf("%s, WaitReplicas %d: %d ran twice, %d lost, %d dead letters; want none", c.name, c.wait, r.twice, r.lost, r.dead)
		}
	}
}

// The finding of section 11 (issue 37): slots of live keys migrated under
// load, a record acknowledged before or during the migration must still be
// there after it. It fails when a migrated slot goes back to its old owner
// (an epoch tie; MigrateSlot claims it again) and Redis drops the keys it
// held there: in about half of the full-size migrations of
// `go run ./bench -only clustered`, so this test runs up to three of them.
//
// It reproduces an open finding of Redis Cluster itself, which redisstore
// cannot prevent (keystore/redisstore's "Resharding" documents it), and
// runs only when asked: GEOIDEM_REPRO_MIGRATION=1 go test -run
// TestMigrationLosesNoRecord ./bench. CI runs TestTopologyRedis.
func TestMigrationLosesNoRecord(t *testing.T) {
	if os.Getenv("GEOIDEM_REPRO_MIGRATION") != "1" {
		t.Skip("the reproduction of an open Redis Cluster finding: set GEOIDEM_REPRO_MIGRATION=1")
	}
	o := tinyOptions(t)
	o.topoEvents, o.topoSenders, o.topoSpan = 600, 16, 6*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := rediscluster.Start(ctx, rediscluster.Options{AppendFsync: "everysec"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := topoCases()[0]
	if c.event != "migrate" || c.wait != 0 {
		t.Fatalf("the first case is %+v, not a migration with WaitReplicas 0", c)
	}
	for i := range 3 {
		r, err := runTopo(ctx, redisRun(&o, cl, c, uint64(i+1), "topolost-"+string(rune('0'+i))+":"))
		if err != nil {
			t.Fatal(err)
		}
		if r.lost > 0 || r.twice > 0 {
			t.Fatalf("run %d: %d acknowledged records lost, %d keys ran twice across %s", i, r.lost, r.twice, r.event)
		}
		t.Logf("run %d: nothing lost across %s", i, r.event)
	}
}
