package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// fullJournal is a FileJournal on a disk with room for a number of
// records: the next Record fails with ENOSPC, as on a full filesystem.
type fullJournal struct {
	*client.FileJournal
	mu   sync.Mutex
	room int
}

func (j *fullJournal) Record(ctx context.Context, e client.JournalEntry) (client.JournalEntry, error) {
	j.mu.Lock()
	full := j.room == 0
	if !full {
		j.room--
	}
	j.mu.Unlock()
	if full {
		return client.JournalEntry{}, &os.PathError{Op: "write", Path: "sender.journal", Err: syscall.ENOSPC}
	}
	return j.FileJournal.Record(ctx, e)
}

func onFullDisk(room int) func(string, client.FileJournalConfig) (journal, error) {
	return func(path string, cfg client.FileJournalConfig) (journal, error) {
		j, err := client.OpenFileJournal(path, cfg)
		if err != nil {
			return nil, err
		}
		return &fullJournal{FileJournal: j, room: room}, nil
	}
}

// TestRunFullDisk: with its journal on a full disk and -dead-letter on a
// healthy one, the sender sends no feature it could not journal, appends
// every one of them to the dead-letter file (reason "not-journaled"),
// says so in its summary and exits 3; a re-drive of that file then
// delivers them, each once. Without -dead-letter it still sends nothing it
// could not journal, and says that a re-run sends them.
func TestRunFullDisk(t *testing.T) {
	rv := newReceiver()
	srv := newServer(t, rv)
	var lines []string
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		lines = append(lines, `{"type":"Feature","id":"`+id+`","geometry":null,"properties":null}`)
	}
	in := writeFile(t, "in.ndjson", strings.Join(lines, "\n")+"\n")
	dead := filepath.Join(t.TempDir(), "dead.jsonl")

	r := runApp(t, app{hc: srv.Client(), openJournal: onFullDisk(2)}, "-url", srv.URL+"/features", "-dead-letter", dead, in)
	t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (not journaled)", r.code)
	}
	for _, want := range []string{"delivered           2", "not-journaled     3", "dead-lettered       3"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if !strings.Contains(r.stderr, "no space left on device") {
		t.Error("stderr does not say why the journal failed")
	}
	if n := rv.executions(); n != 2 {
		t.Errorf("%d features executed, want the 2 journaled", n)
	}
	f, err := os.Open(dead)
	if err != nil {
		t.Fatal(err)
	}
	dls, err := client.ReadDeadLetters(f)
	f.Close()
	if err != nil || len(dls) != 3 {
		t.Fatalf("%d dead letters (%v), want 3", len(dls), err)
	}
	for _, dl := range dls {
		if dl.Reason != "not-journaled" || dl.Attempts != 0 || !strings.Contains(string(dl.Body), "observation_time") {
			t.Errorf("dead letter %s: reason %q, %d attempts, payload %s", dl.Key, dl.Reason, dl.Attempts, dl.Body)
		}
	}

	re := runApp(t, app{hc: srv.Client()}, "-redrive", dead)
	if re.code != 0 || rv.executions() != 5 || rv.mismatches() != 0 {
		t.Errorf("re-drive: exit %d, %d executions, %d key reuses; want 0, 5, 0\n%s%s", re.code, rv.executions(), rv.mismatches(), re.stdout, re.stderr)
	}

	// Without -dead-letter: nothing sent that was not journaled, and said.
	rv2 := newReceiver()
	srv2 := newServer(t, rv2)
	r = runApp(t, app{hc: srv2.Client(), openJournal: onFullDisk(1)}, "-url", srv2.URL+"/features", in)
	if r.code != 3 || rv2.executions() != 1 || !strings.Contains(r.stdout, "not-journaled     4") || !strings.Contains(r.stderr, "re-run") {
		t.Errorf("no -dead-letter: exit %d, %d executions; want 3, 1, the 4 counted and a re-run advised\n%s\n%s", r.code, rv2.executions(), r.stdout, r.stderr)
	}
}
