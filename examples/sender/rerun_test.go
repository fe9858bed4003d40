package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunRerun runs the command twice over the same input, the second time
// later (another clock): every feature the first run delivered is replayed,
// with the bytes and under the key of the first run, never refused as key
// reuse (422) and never executed twice.
func TestRunRerun(t *testing.T) {
	rv := newReceiver()
	srv := newServer(t, rv)
	in := writeFile(t, "in.geojson", collection)
	journal := filepath.Join(t.TempDir(), "sender.journal")

	first := runApp(t, app{hc: srv.Client(), clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}, "-url", srv.URL, "-journal", journal, in)
	if first.code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", first.code, first.stdout, first.stderr)
	}
	executed := rv.executions()
	second := runApp(t, app{hc: srv.Client(), clock: &fakeClock{now: time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)}}, "-url", srv.URL, "-journal", journal, in)
	if second.code != 0 {
		t.Fatalf("second run: exit %d, want 0\n%s\n%s", second.code, second.stdout, second.stderr)
	}
	if !strings.Contains(second.stdout, "replayed          2") {
		t.Errorf("second run: want both features replayed:\n%s", second.stdout)
	}
	if got := rv.executions(); got != executed {
		t.Errorf("%d executions after the second run, %d after the first: a re-run executed again", got, executed)
	}
	if n := rv.mismatches(); n != 0 {
		t.Errorf("%d answers 422 key reused", n)
	}
}
