package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/rediscluster"
)

// One Redis Cluster row of section 11, chosen by $GEOIDEM_TOPO_EVENT
// (migrate, failover or kill; default migrate), at a small size: every
// event acknowledged or dead-lettered, and, for a migration or a planned
// failover, nothing run twice and nothing lost.
func TestTopologyRedis(t *testing.T) {
	o := tinyOptions(t)
	o.topoEvents, o.topoSenders, o.topoSpan = 120, 8, 4*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	event := os.Getenv("GEOIDEM_TOPO_EVENT")
	if event == "" {
		event = "migrate"
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
