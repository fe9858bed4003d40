package keystoretest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/linearize"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
)

// naive is a small in-memory Store, correct unless one of its bugs is
// switched on: the bugs that nearly every idempotency library has (see
// DESIGN.md), for showing that Linearizable catches them.
type naive struct {
	checkThenSet  bool // Claim reads, lets go of the lock, then writes
	noFencing     bool // Complete stores the record for any token
	endlessLeases bool // an expired lease is never taken over
	lostRepeats   bool // a token's repeated Complete fails with ErrLeaseLost

	mu   sync.Mutex
	m    map[string]*naiveEntry
	last keystore.Token
	hits int // calls whose answer the switched-on bug changed
}

type naiveEntry struct {
	status   linearize.KeyStatus
	fp       keystore.Fingerprint
	token    keystore.Token
	deadline time.Time
	rec      keystore.Record
}

func (s *naive) alive(e *naiveEntry, now time.Time) bool {
	if e == nil || e.status == linearize.Released {
		return false
	}
	if now.Before(e.deadline) {
		return true
	}
	if s.endlessLeases && e.status == linearize.Held {
		s.hits++
		return true
	}
	return false
}

func (s *naive) Claim(ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (keystore.Claim, error) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*naiveEntry{}
	}
	e := s.m[key]
	now := time.Now()
	if s.alive(e, now) {
		defer s.mu.Unlock()
		if e.status == linearize.Held {
			return keystore.Claim{State: keystore.InFlight, Fingerprint: e.fp, LeaseRemaining: max(e.deadline.Sub(now), time.Millisecond)}, nil
		}
		return keystore.Claim{State: keystore.Completed, Fingerprint: e.fp, Record: e.rec.Clone()}, nil
	}
	tookOver := e != nil && e.status == linearize.Held
	if s.checkThenSet {
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
		if s.m[key] != e {
			s.hits++ // another Claim wrote the key in between
		}
	}
	defer s.mu.Unlock()
	s.last++
	s.m[key] = &naiveEntry{status: linearize.Held, fp: fp, token: s.last, deadline: time.Now().Add(lease)}
	return keystore.Claim{State: keystore.Acquired, Token: s.last, TookOver: tookOver, Fingerprint: fp}, nil
}

func (s *naive) held(key string, tok keystore.Token) *naiveEntry {
	if e := s.m[key]; e != nil && e.status == linearize.Held && e.token == tok && time.Now().Before(e.deadline) {
		return e
	}
	return nil
}

func (s *naive) Extend(ctx context.Context, key string, tok keystore.Token, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.held(key, tok); e != nil {
		e.deadline = time.Now().Add(lease)
		return nil
	}
	if e := s.m[key]; e != nil && e.status == linearize.Completed && e.token == tok && time.Now().Before(e.deadline) {
		return nil
	}
	return keystore.ErrLeaseLost
}

func (s *naive) Complete(ctx context.Context, key string, tok keystore.Token, rec keystore.Record, retention time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.held(key, tok)
	if e == nil && s.noFencing {
		if e = s.m[key]; e != nil {
			s.hits++
		}
	}
	if e != nil {
		e.status, e.token, e.rec, e.deadline = linearize.Completed, tok, rec.Clone(), time.Now().Add(retention)
		return nil
	}
	if e := s.m[key]; e != nil && e.status == linearize.Completed && e.token == tok &&
		time.Now().Before(e.deadline) && linearize.RecordKey(e.rec) == linearize.RecordKey(rec) {
		if !s.lostRepeats {
			return nil
		}
		s.hits++
	}
	return keystore.ErrLeaseLost
}

func (s *naive) Release(ctx context.Context, key string, tok keystore.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.held(key, tok); e != nil {
		e.status = linearize.Released
		return nil
	}
	if e := s.m[key]; e != nil && e.status == linearize.Released && e.token == tok {
		return nil
	}
	return keystore.ErrLeaseLost
}

// recordingT records the failures of a check that is expected to fail.
type recordingT struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingT) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recordingT) Logf(string, ...any) {} // keep the histories of expected failures out of the log

// Linearizable passes a correct store and fails each broken one, printing
// the history of the key that went wrong.
//
// Each run is in a synctest bubble: the store, the workload's pauses and
// the check share a virtual clock that moves only while every goroutine
// waits, so how long the machine takes to run a call (its load) cannot
// stretch a repeat past a retention or a lease: what the workload does does
// not depend on the load. And the test first requires that the bug was
// exercised (some call's answer was the bug's), then that the check caught it.
func TestLinearizableCatchesBugs(t *testing.T) {
	cases := []struct {
		name  string
		store func() *naive
		ok    bool
	}{
		{"correct", func() *naive { return &naive{} }, true},
		{"check-then-set claim", func() *naive { return &naive{checkThenSet: true} }, false},
		{"complete without fencing", func() *naive { return &naive{noFencing: true} }, false},
		{"leases that never end", func() *naive { return &naive{endlessLeases: true} }, false},
		{"repeated complete fails", func() *naive { return &naive{lostRepeats: true} }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				store := c.store()
				rt := &recordingT{TB: t}
				st := keystoretest.Linearizable(rt, store, keystoretest.LinearizableConfig{Duration: 10 * time.Second})
				t.Logf("%v; the bug changed %d answers", st, store.hits)
				if c.ok {
					if len(rt.errs) > 0 {
						t.Errorf("a correct store failed the check:\n%s", strings.Join(rt.errs, "\n"))
					}
					return
				}
				if store.hits == 0 {
					t.Fatalf("the workload never exercised the bug %q (%v)", c.name, st)
				}
				if len(rt.errs) == 0 {
					t.Fatalf("the check passed a store with the bug %q, which changed %d answers", c.name, store.hits)
				}
				if !strings.Contains(rt.errs[0], "not linearizable") || !strings.Contains(rt.errs[0], "history (in call order)") {
					t.Errorf("the failure does not show the offending history:\n%.2000s", rt.errs[0])
				}
			})
		})
	}
}
