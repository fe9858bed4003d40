package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// replicaRows checks what every run with replicas must show besides
// runChaos's checks: every replica answered some of the requests, and all
// were restarted before the check (whose GETs found every acknowledged
// feature, or runChaos's checks would have failed).
func replicaRows(t *testing.T, rows map[string]string, n int) {
	t.Helper()
	v := rows["replicas"]
	if count(t, rows, "replicas") != n {
		t.Errorf("replicas %q, want %d", v, n)
	}
	_, spread, _ := strings.Cut(v, "[")
	spread, _, _ = strings.Cut(spread, "]")
	answered := strings.Fields(spread)
	if len(answered) != n || slices.Contains(answered, "0") {
		t.Errorf("replicas %q: want %d replicas that each answered some requests", v, n)
	}
	if count(t, rows, "replicas restarted before the check") != 1 {
		t.Errorf("replicas restarted before the check %q, want 1", rows["replicas restarted before the check"])
	}
}

// TestReplicas runs three receiver processes on one store behind the
// balancer, and breaks them: on Redis each is restarted in turn,
// gracefully, while the deliveries run (balanced at random); on Valkey
// one is SIGKILLed in a handler run once, and on PostgreSQL twice, its
// keys taken over after their lease. No event runs twice, none is lost,
// summed over the replicas. (One run per store keeps the package's
// tests short; the plain rows are measured in docs/stores.md.)
func TestReplicas(t *testing.T) {
	t.Run("redis rolling restart", func(t *testing.T) {
		t.Parallel()
		rows := runChaos(t, "-store", testkit.SharedURL(), "-receivers", "3", "-rolling-restart", "-balance", "random", "-events", replicaEvents)
		replicaRows(t, rows, 3)
		if n := count(t, rows, "replica restarts (SIGTERM)"); n != 3 {
			t.Errorf("%d replica restarts, want 3", n)
		}
		if v := rows["replica restarts (SIGTERM)"]; strings.Contains(v, "(0 in a handler run") {
			t.Errorf("replica restarts %q: none drained a handler run", v)
		}
	})
	t.Run("valkey kill replica", func(t *testing.T) {
		t.Parallel()
		rows := runChaos(t, "-store", testkit.SharedValkeyURL(), "-receivers", "3", "-kill-replica", "1", "-events", replicaEvents)
		replicaRows(t, rows, 3)
		if n := count(t, rows, "replica kills (SIGKILL)"); n != 1 {
			t.Errorf("%d replica kills, want 1", n)
		}
	})
	t.Run("postgres kill replica", func(t *testing.T) {
		t.Parallel()
		rows := runChaos(t, "-store", testkit.SharedPostgresURL(), "-receivers", "3", "-kill-replica", "2", "-events", replicaEvents)
		replicaRows(t, rows, 3)
		if n := count(t, rows, "replica kills (SIGKILL)"); n != 2 {
			t.Errorf("%d replica kills, want 2", n)
		}
		if v := rows["replica kills (SIGKILL)"]; strings.Contains(v, "(0 in a handler run)") {
			t.Errorf("replica kills %q: none landed in a handler run", v)
		}
	})
}

// replicaEvents is the events of a replica test: few, for the package's
// time budget, enough for every kind of proxy fault.
const replicaEvents = "60"

// TestReplicasSplitKeysFail shows that the run counts summed over the
// replicas see what -receivers on the memory store would do: replicas that
// each keep keys of their own (here each its own Redis prefix) run a key
// again whenever a retry reaches another replica, and the run must FAIL.
func TestReplicasSplitKeysFail(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	o := options{store: testkit.SharedURL(), senders: 4, events: 20, attempts: 4, seed: 1,
		receivers: 3, balance: balanceRoundRobin, splitKeys: true}
	code := chaos(context.Background(), o, &stdout, &stderr)
	t.Logf("%s", stdout.String())
	if code != 1 {
		t.Fatalf("exit %d, want 1: replicas with keys of their own ran nothing twice, or the harness did not notice\nstderr:\n%s", code, stderr.String())
	}
	rows := table(t, stdout.String())
	if n := count(t, rows, "events run twice"); n == 0 {
		t.Error("no event run twice across the replicas")
	}
}

// TestReplicasMemoryRefused: replicas on the memory store would each keep
// keys of their own, so the same key would run once on each.
func TestReplicasMemoryRefused(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-receivers", "2"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "memory key store is one process's memory") {
		t.Errorf("stderr %q does not say why", stderr.String())
	}
	for _, args := range [][]string{
		{"-receivers", "0"},
		{"-receivers", "17", "-store", "redis://127.0.0.1:6379/0"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:6379/0", "-balance", "leastconn"},
		{"-rolling-restart", "-store", "redis://127.0.0.1:6379/0"},
		{"-kill-replica", "1", "-store", "redis://127.0.0.1:6379/0"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:6379/0", "-kill-replica", "-1"},
		{"-receivers", "3", "-store", "postgres://127.0.0.1:5432/x", "-kill-receiver", "1"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:6379/0", "-updates", "2"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:7000,127.0.0.1:7001/0", "-store-faults"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:7000,10.0.0.1:7001/0"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:7000,127.0.0.1/0"},
		{"-reshard"},
		{"-receivers", "3", "-reshard", "-store", "redis://127.0.0.1:6379/0"},
		{"-receivers", "3", "-reshard", "-failover"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:6379/0", "-kill-after-effect"},
		{"-receivers", "3", "-store", "redis://127.0.0.1:6379/0", "-effect-delay", "1m"},
		{"-effect-delay", "50ms"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("chaos %q: exit %d, want 2", args, code)
		}
	}
}

// TestBalancer: round robin over the replicas; a replica that refuses the
// connection is passed over for the next; a request whose replica fails
// after it was sent is answered 502 and not sent to another.
func TestBalancer(t *testing.T) {
	var hits [2]atomic.Int64
	var backends []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			body, _ := io.ReadAll(r.Body)
			if string(body) == "hang up" {
				panic(http.ErrAbortHandler) // sent, then the connection drops
			}
			w.Header().Set("X-Replica", r.Header.Get("X-Test"))
			w.WriteHeader(http.StatusCreated)
		}))
		t.Cleanup(srv.Close)
		backends = append(backends, strings.TrimPrefix(srv.URL, "http://"))
	}
	// A port that refuses: listen, note it, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()

	b, err := newBalancer([]string{backends[0], down, backends[1]}, balanceRoundRobin, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	post := func(body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, b.URL()+"/features", strings.NewReader(body))
		req.Header.Set("X-Test", "x")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for range 6 {
		if resp := post("{}"); resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Replica") != "x" {
			t.Fatalf("answer %d, X-Replica %q: want 201 relayed with its headers", resp.StatusCode, resp.Header.Get("X-Replica"))
		}
	}
	// Turns: 0, down→2, 2, 0, down→2, 2: backend 0 twice, backend 2 four times.
	if a, c := hits[0].Load(), hits[1].Load(); a != 2 || c != 4 || b.skipped.Load() != 2 {
		t.Errorf("hits %d and %d, %d skipped; want 2, 4 and 2", a, c, b.skipped.Load())
	}
	before := hits[0].Load() + hits[1].Load()
	if resp := post("hang up"); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a replica that hung up after the request: %d, want 502", resp.StatusCode)
	}
	if n := hits[0].Load() + hits[1].Load() - before; n != 1 {
		t.Errorf("a request that reached a replica was sent %d times, want once", n)
	}
}

// TestLastLineAndEffectLog reads a replica's run log: its last complete
// line, and the effects and writes logged beside the runs.
func TestLastLineAndEffectLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.log")
	content := "run \"a\"\ntook \"a\"\nwrote \"a\"\nrun \"b\"\ntook \"b\"\nrun \"c\"\nrun \"d"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := lastLine(path); got != `run "c"` {
		t.Errorf("lastLine %q, want run \"c\"", got)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := readRunLogAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.attempts) != 3 || l.effects["a"] != 1 || l.effects["b"] != 1 || len(l.writes) != 1 || l.writes["a"] != 1 {
		t.Errorf("counts %+v", l)
	}
}

// TestReplicasKillAfterEffect aims SIGKILLs at the window between a run's
// effect and its key's completion, widened to 50 ms: on Redis (the feature
// write and the completion are two round trips) the killed run's retry,
// once the lease has run out, runs the handler again, and the run must
// FAIL on "events run twice"; with each event stamped with its own
// observation_time the repeat is stale to the feature store, an effect
// idempotent by the event: nothing written twice. On PostgreSQL (one
// transaction) nothing runs twice.
func TestReplicasKillAfterEffect(t *testing.T) {
	args := []string{"-receivers", "3", "-kill-replica", "2", "-kill-after-effect", "-effect-delay", "50ms", "-stamp-events", "-events", replicaEvents}
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"-store", testkit.SharedURL()}, args...), &stdout, &stderr)
		t.Logf("%s", stdout.String())
		if code != 1 {
			t.Fatalf("exit %d, want 1: a kill after the effect ran nothing again, or the harness did not notice\nstderr:\n%s", code, stderr.String())
		}
		rows := table(t, stdout.String())
		if v := rows["replica kills (SIGKILL)"]; !strings.Contains(v, "after a run's effect") || strings.Contains(v, "(0 after") {
			t.Errorf("replica kills %q: none landed after an effect", v)
		}
		if n := count(t, rows, "events run twice"); n == 0 {
			t.Error("no event run twice: the kills after the effect repeated nothing")
		}
		if n := count(t, rows, "features written twice"); n != 0 {
			t.Errorf("%d features written twice: the repeat of a stamped event wrote again", n)
		}
		if n := count(t, rows, "events lost"); n != 0 {
			t.Errorf("%d events lost", n)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		rows := runChaos(t, append([]string{"-store", testkit.SharedPostgresURL()}, args...)...)
		if v := rows["replica kills (SIGKILL)"]; strings.Contains(v, "(0 after") {
			t.Errorf("replica kills %q: none landed after an effect", v)
		}
	})
}

// TestReplicasReshard runs three replicas on a Redis Cluster of the
// harness's own whose slots of live keys are migrated under load: nothing
// run twice, nothing lost, the features found after every replica's
// restart.
func TestReplicasReshard(t *testing.T) {
	t.Parallel()
	rows := runChaos(t, "-reshard", "-receivers", "3", "-events", replicaEvents)
	replicaRows(t, rows, 3)
	if n := count(t, rows, "Cluster slots migrated"); n == 0 {
		t.Error("no slot migrated")
	}
}
