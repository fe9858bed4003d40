package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestFailoverKeepsAcknowledgedFeatures fails over the Redis the receiver
// uses (replication stalled for a second, the primary SIGKILLed, the
// replica promoted) while handlers are in their feature write, with
// WaitReplicas 1: every acknowledged event's feature must answer GET
// /features/{id} after the receiver's redeploy, before any re-send. With
// the feature write unreplicated when the sender is answered 201, the
// features written in the stall were lost with the primary (6 of about 570
// acknowledged, 600 events, seeds 1 and 2).
func TestFailoverKeepsAcknowledgedFeatures(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	args := []string{"-failover", "-wait-replicas", "1", "-senders", "16", "-write-delay", "20ms", "-events", "300"}
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	t.Logf("chaos %s\n%s", strings.Join(args, " "), stdout.String())
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	rows := table(t, stdout.String())
	if n := count(t, rows, "Redis failovers"); n != 1 {
		t.Fatalf("%d failovers, want 1", n)
	}
	if n := count(t, rows, "receiver restarted before the check"); n != 1 {
		t.Errorf("receiver restarted %d times before the check, want 1", n)
	}
	missing, acked := ackedMissing(t, rows)
	if acked == 0 {
		t.Fatal("nothing acknowledged")
	}
	if missing != 0 {
		t.Errorf("%d of %d acknowledged events without their feature after the failover", missing, acked)
	}
	if n := count(t, rows, "events lost"); n != 0 {
		t.Errorf("%d events lost", n)
	}
}
