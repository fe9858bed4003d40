package testkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/keystoretest"
)

// failures is a testing.TB that records Errorf instead of failing.
type failures struct {
	testing.TB
	errs []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *failures) Failed() bool { return len(f.errs) > 0 }
func (f *failures) Helper()      {}

// A run that misses a case runs again with leases and retention doubled,
// and one that covers them all ends the check; three runs that miss fail
// it.
func TestCoverAllCasesDoublesLeases(t *testing.T) {
	all := keystoretest.LinearizableStats{TookOver: 1, InFlight: 1, Completed: 1, LeaseLost: 1}
	if m := MissedCases(all); m != "" {
		t.Fatalf("MissedCases of every case: %q, want none", m)
	}
	if m := MissedCases(keystoretest.LinearizableStats{TookOver: 1, InFlight: 1, LeaseLost: 1}); m != "a key completed" {
		t.Fatalf("MissedCases without a completion: %q", m)
	}
	for _, c := range []struct {
		coversAt time.Duration // the least lease at which a run covers every case
		runs     []time.Duration
		fails    bool
	}{
		{40 * time.Millisecond, []time.Duration{40 * time.Millisecond}, false},
		{160 * time.Millisecond, []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond}, false},
		{time.Second, []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond}, true},
	} {
		f := &failures{TB: t}
		var leases, retentions []time.Duration
		CoverAllCases(f, keystoretest.LinearizableConfig{}, func(cfg keystoretest.LinearizableConfig) (keystoretest.LinearizableStats, string) {
			leases, retentions = append(leases, cfg.Lease), append(retentions, cfg.Retention)
			st := all
			if cfg.Lease < c.coversAt {
				st.Completed = 0
			}
			return st, MissedCases(st)
		})
		if fmt.Sprint(leases) != fmt.Sprint(c.runs) {
			t.Errorf("covering at %v: runs with leases %v, want %v", c.coversAt, leases, c.runs)
		}
		for i, r := range retentions {
			if want := 100 * time.Millisecond << i; r != want {
				t.Errorf("covering at %v: run %d with retention %v, want %v (doubled with the lease)", c.coversAt, i+1, r, want)
			}
		}
		if f.Failed() != c.fails {
			t.Errorf("covering at %v: failed %v (%v), want %v", c.coversAt, f.Failed(), f.errs, c.fails)
		}
	}
}
