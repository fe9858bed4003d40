package main

import (
	"github.com/geoidem/geoidem/internal/ingest"
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
