package redisstore_test

import (
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// newTCPProxy puts an internal/testkit Cutter in front of target, closed in
// t.Cleanup: Cut makes Redis unreachable (resets), Stall makes it hang (no
// answer, only timeouts), Restore brings it back.
func newTCPProxy(t testing.TB, target string) *testkit.Cutter {
	t.Helper()
	p, err := testkit.NewCutter(target)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
