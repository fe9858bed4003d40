//go:build race

package client

// raceEnabled: the race detector's instrumentation makes some values
// escape that do not otherwise, so allocation counts are not checked
// under it.
const raceEnabled = true
