//go:build !race

package newest_test

const raceEnabled = false
