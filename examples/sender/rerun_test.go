package main

import (
	"os"
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

// TestRunRerunWithoutJournal (issue 36, item 1): the same file sent again
// without its journal (from another host, a new container, or after the
// journal was deleted) stamps a new observation_time under the same keys.
// The receiver keeps the first send and answers 422 key-reused; the
// sender used to count those as permanent failures and dead-letter them
// ("delivered 0 / permanent 2", exit 1). They are events sent earlier:
// counted as such, not dead-lettered, not executed again, exit 0; and a
// run over that second journal says the same.
func TestRunRerunWithoutJournal(t *testing.T) {
	rv := newReceiver()
	srv := newServer(t, rv)
	in := writeFile(t, "in.geojson", collection)
	dir := t.TempDir()
	dead := filepath.Join(dir, "dead.jsonl")

	first := runApp(t, app{hc: srv.Client(), clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}},
		"-url", srv.URL, "-journal", filepath.Join(dir, "host-a.journal"), in)
	if first.code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", first.code, first.stdout, first.stderr)
	}
	executed := rv.executions()
	for run, at := range []time.Time{time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)} {
		r := runApp(t, app{hc: srv.Client(), clock: &fakeClock{now: at}},
			"-url", srv.URL, "-journal", filepath.Join(dir, "host-b.journal"), "-dead-letter", dead, in)
		if r.code != 0 {
			t.Errorf("run %d without the first journal: exit %d, want 0\n%s\n%s", run+2, r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"sent earlier        2", "not delivered       0", "dead-lettered       0"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("run %d: summary lacks %q:\n%s", run+2, want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "permanent") {
			t.Errorf("run %d: a feature delivered earlier counted as permanent:\n%s", run+2, r.stdout)
		}
		if !strings.Contains(r.stderr, "2 features were sent earlier") {
			t.Errorf("run %d: stderr does not explain the features sent earlier:\n%s", run+2, r.stderr)
		}
	}
	if data, err := os.ReadFile(dead); err == nil && len(data) > 0 {
		t.Errorf("dead letters written:\n%s", data)
	}
	if got := rv.executions(); got != executed {
		t.Errorf("%d executions after the re-runs, %d after the first: executed again", got, executed)
	}
	if n := rv.mismatches(); n != 4 {
		t.Errorf("%d answers 422 key-reused, want 4 (the receiver keeps the first stamp)", n)
	}
}
