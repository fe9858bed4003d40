package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRedisRestartRunsTwice is the harness's own test of its run count. A
// Redis without persistence (-restart-redis: a redis-server of the
// harness's own, on a spare port) is SIGKILLed under load and restarted
// empty: every key completed before the restart is forgotten, so the
// re-send of every event runs those handlers again. The ingest service's
// in-memory feature store skips a second write of a key it has seen, so no
// feature is written twice; the harness must see the second runs anyway:
// "events run twice" and the guard's skips above 0, and the run FAILs.
func TestRedisRestartRunsTwice(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"-restart-redis", "1", "-events", "150"}, &stdout, &stderr)
	t.Logf("%s", stdout.String())
	if code != 1 {
		t.Fatalf("exit %d, want 1: the handler ran twice for every key completed before the restart\nstderr:\n%s", code, stderr.String())
	}
	rows := table(t, stdout.String())
	if n := count(t, rows, "Redis restarts"); n != 1 {
		t.Errorf("%d Redis restarts, want 1", n)
	}
	if n := count(t, rows, "features written twice"); n != 0 {
		t.Errorf("%d features written twice: the in-memory guard should have absorbed the second writes", n)
	}
	if n := count(t, rows, "guard skips (in-process)"); n == 0 {
		t.Error("no guard skips: the re-runs never reached the write, or were not counted")
	}
	if n := count(t, rows, "events run twice"); n == 0 {
		t.Error("no event ran twice by the harness's count, though the restart lost every completed key")
	}
	if !strings.HasPrefix(rows["result"], "FAIL") {
		t.Errorf("result %q, want FAIL", rows["result"])
	}
}

// TestRedisRestartAOFRunsOnce is the same restart on a redis-server with
// appendonly yes and appendfsync always (-redis-aof): the restart reloads
// every write the server acknowledged, so no handler runs twice and the run
// passes.
func TestRedisRestartAOFRunsOnce(t *testing.T) {
	t.Parallel()
	rows := runChaos(t, "-restart-redis", "1", "-redis-aof", "-events", "150")
	if n := count(t, rows, "Redis restarts"); n != 1 {
		t.Errorf("%d Redis restarts, want 1", n)
	}
	if !strings.Contains(rows["store"], "appendfsync always") {
		t.Errorf("store %q does not name the AOF configuration", rows["store"])
	}
}

// TestRedisFailover runs -failover, with and without WaitReplicas: the
// harness's own primary is SIGKILLed after a 1 s replication stall, its
// replica promoted, and the run completes with the failover counted and no
// event lost. (Whether events run twice depends on the claims the stall
// caught; the bench's store-faults section counts them.)
func TestRedisFailover(t *testing.T) {
	for _, wait := range []string{"0", "1"} {
		t.Run("WaitReplicas="+wait, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"-failover", "-wait-replicas", wait, "-events", "150"}, &stdout, &stderr)
			t.Logf("%s", stdout.String())
			if code != 0 && code != 1 {
				t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
			}
			rows := table(t, stdout.String())
			if n := count(t, rows, "Redis failovers"); n != 1 {
				t.Errorf("%d failovers, want 1", n)
			}
			if n := count(t, rows, "events lost"); n != 0 {
				t.Errorf("%d events lost", n)
			}
			if !strings.Contains(rows["store"], "WaitReplicas "+wait) {
				t.Errorf("store %q does not name WaitReplicas %s", rows["store"], wait)
			}
		})
	}
}
