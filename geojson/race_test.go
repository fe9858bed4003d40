//go:build race

package geojson

// raceEnabled: under the race detector, sync.Pool drops a share of what
// it is given, at random, so a pooled parser's grown scratch is sometimes
// allocated afresh; warm allocation counts are not checked under it (the
// allocation step of scripts/test runs them without -race).
const raceEnabled = true
