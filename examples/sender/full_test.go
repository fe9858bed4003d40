package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// TestRunStoreFull: a receiver whose key store is full
// answers 503 store-full with Retry-After 85811 s. The sender used to clamp
// that to 60 s and retry until its 5-minute deadline, every feature, its
// progress line frozen. Now a Retry-After beyond the deadline ends the
// delivery at once: one attempt, dead-lettered with the reason
// "retry-after-beyond-deadline", which the summary names.
func TestRunStoreFull(t *testing.T) {
	rv := newReceiver()
	srv := newServer(t, rv)
	in := writeFile(t, "in.ndjson", `{"type":"Feature","id":"ok","geometry":null,"properties":null}
{"type":"Feature","id":"full","geometry":null,"properties":{"mode":"full"}}
`)
	dead := filepath.Join(t.TempDir(), "dead.jsonl")
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	r := runApp(t, app{hc: srv.Client(), clock: clock}, "-url", srv.URL, "-dead-letter", dead, in)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := clock.Now().Sub(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)); got != 0 {
		t.Errorf("the run waited %v", got)
	}
	if rv.requests != 2 {
		t.Errorf("%d requests, want 2 (one per feature)", rv.requests)
	}
	for _, want := range []string{"not delivered       1", "    retry-after-beyond-deadline 1", "dead-lettered       1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "in.ndjson:2") || !strings.Contains(r.stderr, "Retry-After") {
		t.Errorf("stderr does not name the failure and its reason:\n%s", r.stderr)
	}
	data, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	dls, err := client.ReadDeadLetters(bytes.NewReader(data))
	if err != nil || len(dls) != 1 || dls[0].Reason != "retry-after-beyond-deadline" || dls[0].Attempts != 1 {
		t.Errorf("dead letters %+v, %v", dls, err)
	}
}

// TestProgressShowsWaits: a delivery waiting out a
// Retry-After shows on the progress line, with the answer it waits for,
// instead of a line that stays the same.
func TestProgressShowsWaits(t *testing.T) {
	in := `{"type":"Feature","id":"busy","geometry":null,"properties":{"mode":"busy"}}` + "\n"
	const want = "waiting 1 (retry-after 503 store-full)"

	t.Run("terminal", func(t *testing.T) {
		rv := newReceiver()
		srv := newServer(t, rv)
		r := runApp(t, app{hc: srv.Client(), terminal: func(io.Writer) bool { return true }}, "-url", srv.URL, writeFile(t, "in.ndjson", in))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "\r\033[K0/1  delivered 0 (replayed 0)  failed 0  "+want) {
			t.Errorf("no progress line with %q in %q", want, r.stdout)
		}
		if !strings.HasSuffix(r.stdout[:strings.Index(r.stdout, "\n")], "1/1  delivered 1 (replayed 0)  failed 0") {
			t.Errorf("the last progress line still shows a wait: %q", r.stdout)
		}
	})
	t.Run("piped", func(t *testing.T) {
		rv := newReceiver()
		srv := newServer(t, rv)
		var stderr syncBuffer
		// The wait lasts until a progress line has shown it.
		clock := &gateClock{fakeClock: fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
			until: func() bool { return strings.Contains(stderr.String(), ", "+want) }}
		var stdout bytes.Buffer
		a := app{hc: srv.Client(), clock: clock}
		code := a.run(context.Background(), []string{"-url", srv.URL, "-journal", filepath.Join(t.TempDir(), "journal"),
			"-progress", "5ms", writeFile(t, "in.ndjson", in)}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
		}
		if !strings.Contains(stderr.String(), "sender: progress: 0/1 done, delivered 0 (replayed 0), not delivered 0, in flight 1, "+want+"\n") {
			t.Errorf("no progress line with %q:\n%s", want, stderr.String())
		}
	})
}

// gateClock is a fakeClock whose Sleep first waits for until to hold.
type gateClock struct {
	fakeClock
	until func() bool
}

func (c *gateClock) Sleep(ctx context.Context, d time.Duration) error {
	if !waitFor(c.until) {
		return context.DeadlineExceeded
	}
	return c.fakeClock.Sleep(ctx, d)
}
