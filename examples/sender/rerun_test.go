package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/internal/geofeature"
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

// TestRunRerunWithoutJournal: the same file sent again
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

// TestRunRerunFailures: run again over the same input,
// journal and dead-letter file, the sender used to send again the feature
// refused permanently and to append a second dead letter for each failure.
// Now the refused feature is not sent again (unless -resend-permanent),
// the one that failed for now is, and the dead-letter file gets no line
// it already holds.
func TestRunRerunFailures(t *testing.T) {
	rv := newReceiver()
	srv := newServer(t, rv)
	dir := t.TempDir()
	dead := filepath.Join(dir, "dead.jsonl")
	args := []string{"-url", srv.URL, "-attempts", "2", "-dead-letter", dead, "-journal", filepath.Join(dir, "journal"),
		writeFile(t, "in.ndjson", failuresInput)}
	badKey, _ := geofeature.Key([]byte(`{"type":"Feature","id":"bad","geometry":null,"properties":{"mode":"bad"}}`))
	downKey, _ := geofeature.Key([]byte(`{"type":"Feature","id":"down","geometry":null,"properties":{"mode":"down"}}`))
	deadLetters := func() []client.DeadLetter {
		t.Helper()
		data, err := os.ReadFile(dead)
		if err != nil {
			t.Fatal(err)
		}
		dls, err := client.ReadDeadLetters(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return dls
	}

	if r := runApp(t, app{hc: srv.Client()}, args...); r.code != 1 || len(deadLetters()) != 2 {
		t.Fatalf("first run: exit %d, %d dead letters; want 1 and 2\n%s\n%s", r.code, len(deadLetters()), r.stdout, r.stderr)
	}

	r := runApp(t, app{hc: srv.Client()}, args...)
	if r.code != 1 {
		t.Errorf("re-run: exit %d, want 1", r.code)
	}
	if n := rv.attemptsOf(badKey); n != 1 {
		t.Errorf("re-run: the refused feature was sent again (%d attempts in all)", n)
	}
	if n := rv.attemptsOf(downKey); n != 4 {
		t.Errorf("re-run: the feature that failed for now got %d attempts in all, want 4 (sent again)", n)
	}
	if dls := deadLetters(); len(dls) != 2 {
		t.Errorf("re-run: %d dead letters in the file, want still 2:\n%+v", len(dls), dls)
	}
	for _, want := range []string{"    permanent         1\n", "    exhausted         1\n", "dead-lettered       1 (" + dead + "; already in it: 1)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("re-run: summary lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, want := range []string{"in.ndjson:2: ", "refused permanently by an earlier send", "-resend-permanent"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("re-run: stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	r = runApp(t, app{hc: srv.Client()}, append([]string{"-resend-permanent"}, args...)...)
	if r.code != 1 || rv.attemptsOf(badKey) != 2 {
		t.Errorf("-resend-permanent: exit %d, %d attempts of the refused feature in all; want 1 and 2\n%s\n%s", r.code, rv.attemptsOf(badKey), r.stdout, r.stderr)
	}
	if dls := deadLetters(); len(dls) != 2 {
		t.Errorf("-resend-permanent: %d dead letters in the file, want still 2", len(dls))
	}
}
