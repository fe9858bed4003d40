package memstore_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// Every key's history under concurrent clients is linearizable. The run is
// in a synctest bubble: the holders' pauses and the store's leases run on
// the bubble's clock, which the store and the check share exactly, so the
// check allows no slack in judging leases and retention.
func TestLinearizable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := keystoretest.Linearizable(t, new(memstore.Store), keystoretest.LinearizableConfig{
			Slack:    -1,
			Duration: 5 * time.Second,
			Ops:      4000,
		})
		if st.TookOver == 0 || st.InFlight == 0 || st.Completed == 0 || st.LeaseLost == 0 {
			t.Errorf("the workload missed a case: %v", st)
		}
	})
}

// The same on the real clock, where calls overlap in time and the check must
// try their orders, judging leases with the default slack; a run that
// misses a case (the machine's load slowing calls past their leases) runs
// again with longer leases.
func TestLinearizableRealClock(t *testing.T) {
	s := new(memstore.Store)
	testkit.CoverAllCases(t, keystoretest.LinearizableConfig{Duration: 2 * time.Second}, func(lc keystoretest.LinearizableConfig) (keystoretest.LinearizableStats, string) {
		st := keystoretest.Linearizable(t, s, lc)
		return st, testkit.MissedCases(st)
	})
}
