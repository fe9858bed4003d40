//go:build race

package middleware_test

// raceEnabled: the race detector's instrumentation makes some buffers
// escape that do not otherwise (keystore.NewClaimToken's), so allocation
// budgets allow for it.
const raceEnabled = true
