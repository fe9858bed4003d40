package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// runUpdates runs an -updates run and checks what every one must show:
// exit 0, every feature stored with its newest observation, faults
// injected, and the stale path exercised (older observations arriving
// after newer ones, answered 200).
func runUpdates(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	args = append([]string{"-updates", "4", "-events", "60"}, args...)
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	t.Logf("chaos %s\n%s", strings.Join(args, " "), stdout.String())
	rows := table(t, stdout.String())
	if n := count(t, rows, "stale final state"); n != 0 {
		t.Errorf("stale final state %d: features left holding an older observation", n)
	}
	if n := count(t, rows, "events lost"); n != 0 {
		t.Errorf("%d features lost", n)
	}
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr.String())
	}
	if n := count(t, rows, "features stored"); n != 60 {
		t.Errorf("%d features stored, want 60", n)
	}
	if proxyFaults(t, rows) == 0 {
		t.Error("the proxy injected no faults")
	}
	if count(t, rows, "answered stale (200)") == 0 {
		t.Error("no update was answered stale: no older observation arrived after a newer one, the run proves nothing")
	}
}

func TestUpdatesMemory(t *testing.T) {
	t.Parallel()
	runUpdates(t)
}

func TestUpdatesRedis(t *testing.T) {
	t.Parallel()
	runUpdates(t, "-store", testkit.SharedURL())
}

func TestUpdatesPostgres(t *testing.T) {
	t.Parallel()
	runUpdates(t, "-store", testkit.SharedPostgresURL())
}

func TestUpdatesUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-updates", "-1"},
		{"-updates", "21"},
		{"-updates", "2", "-kill-sender", "1"},
		{"-updates", "2", "-store", "redis://127.0.0.1:6379/0", "-store-faults"},
		{"-updates", "2", "-restart-redis", "1"},
		{"-updates", "2", "-failover"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("chaos %q: exit %d, want 2", args, code)
		}
	}
}

func TestMakeUpdatesSeeded(t *testing.T) {
	a, b := makeUpdates(5, 3, 7, "r"), makeUpdates(5, 3, 7, "r")
	if len(a) != 15 {
		t.Fatalf("%d updates, want 15", len(a))
	}
	for i := range a {
		if !bytes.Equal(a[i].body, b[i].body) || a[i].key != b[i].key {
			t.Fatalf("update %d differs between two runs of one seed", i)
		}
	}
	if !bytes.Contains(a[5].body, []byte(`"id":"u1"`)) || !bytes.Contains(a[5].body, []byte(`"observation_time":"2026-03-01T10:00:02Z"`)) {
		t.Errorf("update 5 = %s, want u1's third observation (10:00:02)", a[5].body)
	}
}
