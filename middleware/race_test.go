//go:build race

package middleware_test

// raceEnabled: under the race detector, sync.Pool drops a share of what
// it is given, at random, so that the pooled body buffers (bodypool.go)
// and claim token batches (newToken) are sometimes allocated afresh, and
// its instrumentation makes some buffers escape that do not otherwise;
// allocation budgets allow for one more.
const raceEnabled = true
