package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The shared test Redis runs without persistence: the service refuses it,
// saying which flag accepts it, and with -redis-volatile it serves and
// prints what that accepts.
func TestIngestRefusesVolatileRedisUnlessAccepted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"-addr", "127.0.0.1:0", "-store", "redis://127.0.0.1:6379/0"}, &stdout, &stderr); code != 1 {
		t.Fatalf("ingest on a Redis without persistence: exit %d, want 1; stderr %q", code, stderr.String())
	}
	for _, want := range []string{`appendonly no, save ""`, "every completed record and every claim", "pass -redis-volatile"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q, want it to say %q", stderr.String(), want)
		}
	}

	ctx, stop := context.WithCancel(ctx)
	var errs bytes.Buffer
	out := lineWriter{make(chan string, 16)}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-addr", "127.0.0.1:0", "-store", "redis://127.0.0.1:6379/0", "-redis-volatile"}, out, &errs)
	}()
	select {
	case l := <-out.lines:
		if !servingRE.MatchString(l) {
			t.Errorf("first line %q, want the URL served", l)
		}
	case c := <-code:
		t.Fatalf("ingest -redis-volatile exited %d before serving: %s", c, errs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("ingest -redis-volatile: no URL printed within 10s")
	}
	stop()
	if c := <-code; c != 0 {
		t.Errorf("ingest -redis-volatile exited %d after cancel, want 0", c)
	}
	if !strings.Contains(errs.String(), "-redis-volatile: a Redis restart then loses every completed record and every claim") {
		t.Errorf("stderr %q, want what -redis-volatile accepts", errs.String())
	}
}
