package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// startRedis starts a private redis-server for one test, stopped at its end,
// with persistence as o says: what the shared Redis keeps is not this
// test's to assume.
func startRedis(t *testing.T, o testkit.RedisOptions) string {
	t.Helper()
	srv, err := testkit.StartRedis(t.Context(), o)
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	return "redis://" + srv.Addr() + "/0"
}

// serveUntilURL runs the service with args until it prints the URL it
// serves, then cancels it; it wants exit status 0 and returns stderr.
func serveUntilURL(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var errs bytes.Buffer
	out := lineWriter{make(chan string, 16)}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), out, &errs)
	}()
	select {
	case l := <-out.lines:
		if !servingRE.MatchString(l) {
			t.Errorf("%v: first line %q, want the URL served", args, l)
		}
	case c := <-code:
		t.Fatalf("%v: exited %d before serving: %s", args, c, errs.String())
	case <-ctx.Done():
		t.Fatalf("%v: no URL printed before %v", args, ctx.Err())
	}
	stop()
	if c := <-code; c != 0 {
		t.Errorf("%v: exited %d after cancel, want 0", args, c)
	}
	return errs.String()
}

// On a Redis without persistence (its own, so that the shared one may keep
// whatever it keeps) the service refuses to start, saying which flag
// accepts it, and with -redis-volatile it serves and prints what that
// accepts.
func TestIngestRefusesVolatileRedisUnlessAccepted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	volatile := startRedis(t, testkit.RedisOptions{}) // --save "" --appendonly no
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"-addr", "127.0.0.1:0", "-store", volatile}, &stdout, &stderr); code != 1 {
		t.Fatalf("ingest on a Redis without persistence: exit %d, want 1; stderr %q", code, stderr.String())
	}
	for _, want := range []string{`appendonly no, save ""`, "every completed record and every claim", "pass -redis-volatile"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q, want it to say %q", stderr.String(), want)
		}
	}
	errs := serveUntilURL(t, ctx, "-store", volatile, "-redis-volatile")
	if !strings.Contains(errs, "-redis-volatile: a Redis restart then loses every completed record and every claim") {
		t.Errorf("stderr %q, want what -redis-volatile accepts", errs)
	}
}

// On a Redis with an append-only file fsynced on every write the service
// starts without -redis-volatile, and says nothing of volatility.
func TestIngestServesOnPersistentRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	persistent := startRedis(t, testkit.RedisOptions{AppendFsync: "always"})
	if errs := serveUntilURL(t, ctx, "-store", persistent); strings.Contains(errs, "volatile") {
		t.Errorf("stderr %q on a Redis with appendfsync always, want no word of volatility", errs)
	}
}
