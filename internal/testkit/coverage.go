package testkit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/keystoretest"
)

// MissedCases names the cases of the contract that a
// keystoretest.Linearizable run did not exercise, among a takeover, a key
// in flight, a key completed and a lost lease; "" when it exercised all.
func MissedCases(st keystoretest.LinearizableStats) string {
	var missed []string
	for _, c := range []struct {
		name string
		n    int
	}{{"a takeover", st.TookOver}, {"a key in flight", st.InFlight}, {"a key completed", st.Completed}, {"a lost lease", st.LeaseLost}} {
		if c.n == 0 {
			missed = append(missed, c.name)
		}
	}
	return strings.Join(missed, ", ")
}

// CoverAllCases runs a linearizability check (run, which returns its
// stats and the cases they miss, "" for none) until one run covers every
// case, with the workload's leases and retention doubled after each run
// that does not, three runs at most. Every run's check must pass. A loaded
// machine slows every call; leases of the default length then run out
// before a holder can complete, and a run misses the completed case for
// the workload's timing, not for a fault of the store.
func CoverAllCases(t testing.TB, cfg keystoretest.LinearizableConfig, run func(keystoretest.LinearizableConfig) (keystoretest.LinearizableStats, string)) {
	t.Helper()
	lease, retention := cfg.Lease, cfg.Retention
	if lease == 0 {
		lease = 40 * time.Millisecond // keystoretest's default
	}
	if retention == 0 {
		retention = 100 * time.Millisecond // keystoretest's default
	}
	const runs = 3
	for i := 1; ; i++ {
		cfg.Lease, cfg.Retention = lease, retention
		st, missed := run(cfg)
		if missed == "" || t.Failed() {
			return
		}
		msg := fmt.Sprintf("run %d, with %v leases and %v retention, missed %s: %v (the workload's timing under load, not a fault of the store)", i, lease, retention, missed, st)
		if i == runs {
			t.Errorf("the workload missed a case in all %d runs; %s", runs, msg)
			return
		}
		t.Logf("%s; running again with leases and retention doubled", msg)
		lease, retention = 2*lease, 2*retention
	}
}
