package main

import (
	"cmp"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFaultsSection runs section 7 alone in the tiny mode: every row is a
// completed chaos run quoting its command, the faults fired, and what the
// stores guarantee shows: a Redis restarted with AOF (appendfsync always)
// and the runs without a store fault run no event twice, while a Redis
// restarted without persistence forgets completed keys, so events run
// twice, and the features it held, so acknowledged events are lost. A
// failover without WaitReplicas may lose what was not replicated; with
// WaitReplicas 1 no acknowledged event is lost.
func TestFaultsSection(t *testing.T) {
	md, out := runSection(t, "faults")
	for _, want := range []string{"## 7. Store faults", "reported before (old code; not this run)", "1,202 of 3,000 keys",
		"store faults", "faults.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
	checkSVG(t, filepath.Join(out, "faults.svg"))

	// row returns the cells of the table row whose first cell starts with name.
	row := func(name string) []string {
		t.Helper()
		for line := range strings.SplitSeq(md, "\n") {
			if strings.HasPrefix(line, "| "+name) {
				cells := strings.Split(strings.Trim(line, "|"), " | ")
				for i := range cells {
					cells[i] = strings.TrimSpace(cells[i])
				}
				return cells
			}
		}
		t.Fatalf("no row %q in:\n%s", name, md)
		return nil
	}
	twice := func(cells []string) int {
		t.Helper()
		n, err := strconv.Atoi(cells[2])
		if err != nil {
			t.Fatalf("events run twice %q: %v", cells[2], err)
		}
		return n
	}
	for _, c := range []struct {
		name, fired, flags string
		twice              func(int) bool
		want               string
		lost               func(int) bool // nil: 0
		wantLost           string
	}{
		{"Redis, no store fault", "none", "-store redis://", func(n int) bool { return n == 0 }, "0", nil, ""},
		{"Redis restart (SIGKILL), no persistence", "1 restarts", "-restart-redis 1 -events 40", func(n int) bool { return n > 0 }, "> 0",
			func(n int) bool { return n > 0 }, "> 0"},
		{"Redis restart (SIGKILL), appendonly yes", "1 restarts", "-restart-redis 1 -redis-aof", func(n int) bool { return n == 0 }, "0", nil, ""},
		{"Redis stalled 1s", "1 stalls", "-stall-for 1s", nil, "", nil, ""},
		{"Redis failover, WaitReplicas 0", "1 failovers", "-failover -wait-replicas 0", nil, "", func(int) bool { return true }, "any"},
		{"Redis failover, WaitReplicas 1", "1 failovers", "-failover -wait-replicas 1", nil, "", nil, ""},
		{"PostgreSQL, no store fault", "none", "-store 'postgres://", func(n int) bool { return n == 0 }, "0", nil, ""},
		{"PostgreSQL, 3 pg_terminate_backend", "3 pg_terminate_backend", "-pg-terminate 3", nil, "", nil, ""},
	} {
		cells := row(c.name)
		if len(cells) != 10 {
			t.Fatalf("row %q has %d cells, want 10: %q", c.name, len(cells), cells)
		}
		if !strings.Contains(cells[4], " 409 (key in flight), ") {
			t.Errorf("%s: dead letters by last answer %q", c.name, cells[4])
		}
		if !strings.HasPrefix(cells[7], c.fired) {
			t.Errorf("%s: faults fired %q, want %q first", c.name, cells[7], c.fired)
		}
		if !strings.HasPrefix(cells[9], "`go run ./examples/chaos ") || !strings.Contains(cells[9], c.flags) {
			t.Errorf("%s: command %q lacks %q", c.name, cells[9], c.flags)
		}
		if n := twice(cells); c.twice != nil && !c.twice(n) {
			t.Errorf("%s: %d events run twice, want %s", c.name, n, c.want)
		}
		lost, err := strconv.Atoi(cells[5])
		if err != nil {
			t.Fatalf("%s: events lost %q: %v", c.name, cells[5], err)
		}
		if c.lost == nil && lost != 0 || c.lost != nil && !c.lost(lost) {
			t.Errorf("%s: %d events lost, want %s", c.name, lost, cmp.Or(c.wantLost, "0"))
		}
	}
}
