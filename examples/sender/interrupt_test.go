package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// TestInterruptStopsCleanly runs the sender as a real process and sends it
// SIGINT while deliveries are in flight: it starts nothing new, lets the
// attempts in flight finish (within -grace), dead-letters nothing, prints
// one summary whose counts add up (delivered + interrupted = all), and
// exits 130. Run again over the same input and journal, it delivers the
// rest: every feature executed exactly once, no key reused with other
// bytes.
func TestInterruptStopsCleanly(t *testing.T) {
	bin, _ := binaries(t)
	const events, before = 40, 10
	rv := newReceiver()
	gate := make(chan struct{})
	var gateOnce sync.Once
	open := func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(open) // before srv.Close, which waits for held requests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rv.executions() >= before {
			<-gate // in flight when the signal comes
		}
		rv.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	var lines []string
	for i := range events {
		lines = append(lines, fmt.Sprintf(`{"type":"Feature","id":"f%d","geometry":null,"properties":{"n":%d}}`, i, i))
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, "dead.jsonl")
	args := []string{"-url", srv.URL + "/features", "-journal", filepath.Join(dir, "journal"), "-dead-letter", dead,
		"-concurrency", "4", "-grace", "60s", "-progress", "0", in}

	cmd := exec.Command(bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderrPipe)
		for sc.Scan() {
			fmt.Fprintln(&stderr, sc.Text())
		}
	}()
	if !waitFor(func() bool { return rv.executions() >= before }) {
		cmd.Process.Kill()
		t.Fatalf("%d features executed, want %d before the signal", rv.executions(), before)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return strings.Contains(stderr.String(), "sender: interrupted: no new attempts") }) {
		t.Errorf("no word of the stop on stderr:\n%s", stderr.String())
	}
	open() // the attempts in flight end now, within the grace period
	done := make(chan error, 1)
	go func() { <-copied; done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the sender did not exit after SIGINT")
	}
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	out := stdout.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	if code != 130 {
		t.Errorf("exit %d, want 130 (interrupted)", code)
	}
	if data, _ := os.ReadFile(dead); len(data) != 0 {
		t.Errorf("dead letters after an interrupt, want none:\n%s", data)
	}
	if strings.Contains(stderr.String(), "canceled") {
		t.Error("stderr reports features as canceled")
	}
	delivered, interrupted := summaryCount(t, out, "delivered"), summaryCount(t, out, "interrupted")
	if delivered < before || interrupted == 0 || delivered+interrupted != events {
		t.Errorf("delivered %d, interrupted %d; want at least %d delivered, some interrupted, %d in all", delivered, interrupted, before, events)
	}
	if n := strings.Count(out, "features to "); n != 1 {
		t.Errorf("%d summaries, want 1", n)
	}

	// The re-run delivers the rest.
	again, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("re-run: %v\n%s", err, again)
	}
	if n := rv.executions(); n != events || rv.mismatches() != 0 {
		t.Errorf("after the re-run: %d features executed, %d keys reused with other bytes; want %d and 0\n%s", n, rv.mismatches(), events, again)
	}
	if summaryCount(t, string(again), "delivered") != events {
		t.Errorf("re-run summary:\n%s", again)
	}
}

// summaryCount reads a top-level line of the summary ("  name   N").
func summaryCount(t *testing.T, out, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` +(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Errorf("the summary has no line %q", name)
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestProgressWhenPiped: when the output is not a terminal, a progress
// line is printed to stderr every -progress, while deliveries are running.
func TestProgressWhenPiped(t *testing.T) {
	rv := newReceiver()
	var stderr syncBuffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hold the first delivery until a progress line has been printed.
		waitFor(func() bool { return strings.Contains(stderr.String(), "sender: progress: ") })
		rv.ServeHTTP(w, r)
	}))
	defer srv.Close()
	in := writeFile(t, "in.geojson", collection)
	var stdout bytes.Buffer
	a := app{hc: srv.Client(), clock: &fakeClock{}}
	code := a.run(context.Background(), []string{"-url", srv.URL, "-journal", filepath.Join(t.TempDir(), "journal"), "-progress", "5ms", in}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "sender: progress: 0/2 done, delivered 0 (replayed 0), not delivered 0, in flight 1") {
		t.Errorf("no progress line while the first delivery was in flight:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "\r") {
		t.Error("a terminal's progress line written to a pipe")
	}
}
