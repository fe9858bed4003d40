package geojson

import (
	"math/rand/v2"
	"testing"
)

// TestMergeFew merges 1 to maxFewRuns sorted runs of random lengths
// (empty ones too, and runs of one event), over few distinct points, and
// compares with a plain sort: every order of merges, and so every mix
// of the two buffers, comes up.
func TestMergeFew(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 3000 {
		r := 1 + rng.IntN(maxFewRuns)
		var evs []event
		var ends []int32
		for range r {
			run := make([]event, []int{0, 1, 2, 7, 40}[rng.IntN(5)]+rng.IntN(3))
			for i := range run {
				run[i] = mkEvent(pt{float64(rng.IntN(8)), float64(rng.IntN(3))}, 0, 0)
			}
			sortEventsCmp(run)
			evs = append(evs, run...)
			ends = append(ends, int32(len(evs)))
		}
		for i := range evs {
			evs[i] = mkEvent(evs[i].p, int32(i), 0)
		}
		want := append([]event(nil), evs...)
		sortEventsCmp(want)
		tmp := make([]event, len(evs))
		for i := range tmp {
			tmp[i] = mkEvent(pt{-1, -1}, -1, 0) // garbage, which must not show
		}
		got, other := mergeFew(evs, tmp, ends)
		if len(got) != len(want) || len(other) != len(want) || len(got) > 0 && &got[0] == &other[0] {
			t.Fatalf("runs %v: buffers of %d and %d events", ends, len(got), len(other))
		}
		seen := make([]bool, len(evs))
		for i := range want {
			if got[i].p != want[i].p || got[i].id() < 0 || seen[got[i].id()] {
				t.Fatalf("runs %v: position %d: got %v, want %v", ends, i, got[i], want[i])
			}
			seen[got[i].id()] = true
		}
	}
}
