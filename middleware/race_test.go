//go:build race

package middleware_test

// raceEnabled: the race detector's instrumentation makes some buffers
// escape that do not otherwise (keystore.NewToken's, for every claim), so allocation
// budgets allow for it.
const raceEnabled = true
