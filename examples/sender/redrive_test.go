package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// TestRunRedrive dead-letters a feature the receiver cannot take, heals the
// receiver and re-drives the dead-letter file: the feature is delivered
// under its original key with the bytes of its first attempt.
func TestRunRedrive(t *testing.T) {
	rv := newReceiver()
	srv := newServer(t, rv)
	in := writeFile(t, "in.ndjson", `{"type":"Feature","id":"ok","geometry":null,"properties":null}
{"type":"Feature","id":"down","geometry":null,"properties":{"mode":"down"}}
`)
	dir := t.TempDir()
	dead := filepath.Join(dir, "dead.jsonl")
	first := runApp(t, app{hc: srv.Client()}, "-url", srv.URL, "-attempts", "2", "-dead-letter", dead, "-journal", filepath.Join(dir, "j"), in)
	if first.code != 1 || !strings.Contains(first.stdout, "dead-lettered       1") {
		t.Fatalf("first run: exit %d, want 1 with one dead letter\n%s\n%s", first.code, first.stdout, first.stderr)
	}
	letters, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	dls, err := client.ReadDeadLetters(bytes.NewReader(letters))
	if err != nil || len(dls) != 1 {
		t.Fatalf("dead letters: %v, %v", dls, err)
	}

	rv.heal()
	again := filepath.Join(dir, "again.jsonl")
	r := runApp(t, app{hc: srv.Client()}, "-redrive", dead, "-dead-letter", again, "-journal", filepath.Join(dir, "j"))
	if r.code != 0 {
		t.Fatalf("re-drive: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "delivered           1") {
		t.Errorf("re-drive summary:\n%s", r.stdout)
	}
	if got := rv.bodies[dls[0].Key]; !bytes.Equal(got, dls[0].Body) {
		t.Errorf("re-driven body = %s, want the dead letter's payload %s", got, dls[0].Body)
	}
	if rv.mismatches() != 0 || rv.executions() != 2 {
		t.Errorf("%d executions, %d key reuses; want 2 and 0", rv.executions(), rv.mismatches())
	}
}
