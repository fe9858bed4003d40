//go:build race

package newest_test

// raceEnabled: under the race detector sync.Pool drops what it holds at
// random, so encoding/json's pooled scanner is allocated again now and then
// and allocation counts are not the program's.
const raceEnabled = true
