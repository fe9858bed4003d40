package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/geoidem/geoidem/examples/internal/ingest"
)

// runCount is what the table shows of the receiver's run counts
// (ingest.Runs): how often each event's handler reached the feature write,
// and how often that took effect.
type runCount struct {
	attempts       int // runs that reached the write, counted before it
	attemptedTwice int // events attempted more than once
	effects        int // runs that took effect
	undone         int // attempts without effect: rolled back or refused
	skips          int // runs whose write the in-memory guard skipped
	skipIDs        []string
	twice          int // events whose effect ran more than once
	twiceIDs       []string
	source         string // where effects come from
}

// countRuns sums r over the feature ids. An event ran twice when its
// effects exceed 1: two committed PostgreSQL transactions, or two in-memory
// runs that wrote or that the guard skipped; a rolled-back attempt is not
// a second run.
func countRuns(r ingest.Runs, source string) runCount {
	c := runCount{source: source}
	for id, n := range r.Attempts {
		c.attempts += n
		if n > 1 {
			c.attemptedTwice++
		}
		c.undone += max(0, n-r.Effects[id])
	}
	for id, n := range r.Effects {
		c.effects += n
		if n > 1 {
			c.twice++
			c.twiceIDs = append(c.twiceIDs, id)
		}
	}
	for id, n := range r.Skipped {
		c.skips += n
		if n > 0 {
			c.skipIDs = append(c.skipIDs, id)
		}
	}
	return c
}

// effectSource says where a store's effects are counted.
func effectSource(o options) string {
	switch {
	case o.naive:
		return "every run writes"
	case o.kind() == postgresStore:
		return "committed: the writes column, incremented in the handler's transaction"
	}
	return "written, or skipped by the in-memory guard"
}

// newRunLog returns the path of a run log in a fresh temporary directory:
// the file every -serve-receiver child appends its runs to.
func newRunLog() (string, error) {
	dir, err := os.MkdirTemp("", "geoidem-chaos-runs-")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "runs.log"), nil
}

// removeRunLog removes the run log and its directory.
func removeRunLog(path string) { _ = os.RemoveAll(filepath.Dir(path)) }

// Runs reads the attempts and skips of every child from the run log (a
// killed child's lines stay in the file) and the effects from the tables.
func (c *child) Runs(ctx context.Context) (ingest.Runs, error) {
	r, err := c.writes.Runs(ctx)
	if err != nil {
		return ingest.Runs{}, err
	}
	f, err := os.Open(c.runLog)
	if errors.Is(err, os.ErrNotExist) {
		r.Attempts, r.Skipped = map[string]int{}, map[string]int{}
		return r, nil
	}
	if err != nil {
		return ingest.Runs{}, err
	}
	defer f.Close()
	logged, err := ingest.ReadRunLog(f)
	if err != nil {
		return ingest.Runs{}, err
	}
	r.Attempts, r.Skipped = logged.Attempts, logged.Skipped
	return r, nil
}
