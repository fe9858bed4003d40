package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// serveUntil runs the service in process on a free port and returns its
// URL and a stop that ends it (a restart: stop, then serveUntil again on
// the same store).
func serveUntil(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	cfg, c := parseFlags(append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard)
	if cfg == nil {
		t.Fatalf("%q: exit %d", args, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{make(chan string, 16)}
	code := make(chan int, 1)
	var stderr safeBuffer
	go func() { code <- serve(ctx, cfg, out, &stderr) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("run exited %d after cancel, want 0", c)
		}
	}
	t.Cleanup(stop)
	select {
	case l := <-out.lines:
		m := servingRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("first line %q does not name the URL", l)
		}
		return m[1], stop
	case c := <-code:
		stopped = true
		t.Fatalf("run exited %d before serving:\n%s", c, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("no URL printed within 30s")
	}
	return "", stop
}

// An acknowledged event survives a restart of the service in every mode
// that keeps its keys outside the process: after the restart the sender's
// retry is replayed from the key store, and the feature it acknowledged is
// there to GET. (With Redis the features were kept in process memory: the
// retry was replayed 201 {"stored":["r1"]} while GET /features/r1 answered
// 404.)
func TestIngestFeaturesSurviveRestart(t *testing.T) {
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	keys, features := "restart_keys_"+suffix, "restart_features_"+suffix
	t.Cleanup(func() { dropTables(t, keys, features) })
	prefix := "geoidem-restart-" + suffix + ":"
	dropRedisPrefix(t, prefix)
	const body = `{"type":"Feature","id":"r1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"n":1}}`
	for _, s := range []struct {
		name string
		args []string
	}{
		{"redis", []string{"-store", testkit.SharedURL(), "-redis-prefix", prefix, "-redis-volatile"}},
		{"postgres", []string{"-store", postgresURL(), "-pg-key-table", keys, "-pg-features-table", features}},
	} {
		t.Run(s.name, func(t *testing.T) {
			url, stop := serveUntil(t, s.args...)
			resp, got := do(t, http.MethodPost, url+"/features", "evt-restart-"+s.name, body)
			if resp.StatusCode != http.StatusCreated || got != `{"stored":["r1"]}` {
				t.Fatalf("first delivery: %d %s", resp.StatusCode, got)
			}
			stop()

			url, _ = serveUntil(t, s.args...)
			resp, got = do(t, http.MethodPost, url+"/features", "evt-restart-"+s.name, body)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" || got != `{"stored":["r1"]}` {
				t.Errorf("the retry after the restart: %d %q %s; want the replay of 201 {\"stored\":[\"r1\"]}", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), got)
			}
			resp, got = do(t, http.MethodGet, url+"/features/r1", "", "")
			if resp.StatusCode != http.StatusOK || got != body {
				t.Errorf("GET /features/r1 after the restart: %d %s; want 200 and the feature acknowledged before it", resp.StatusCode, got)
			}
		})
	}
}
