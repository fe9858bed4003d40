package middleware

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestScheduleHeap sets, moves and cancels many renewals on one schedule
// and checks the heap after each step: every renewal's slot is its
// position, no child is due before its parent, and the timer is armed no
// later than the earliest due time. Due times are hours ahead: nothing
// fires.
func TestScheduleHeap(t *testing.T) {
	var s schedule
	defer func() {
		if s.t != nil {
			s.t.Stop()
		}
	}()
	base := time.Now().Add(time.Hour)
	rns := make([]*renewal, 200)
	for i := range rns {
		rns[i] = &renewal{slot: -1}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(step int) {
		t.Helper()
		for i, rn := range s.heap {
			if rn.slot != i {
				t.Fatalf("step %d: slot %d holds a renewal that says %d", step, i, rn.slot)
			}
			if i > 0 && rn.due.Before(s.heap[(i-1)/2].due) {
				t.Fatalf("step %d: slot %d is due before its parent", step, i)
			}
		}
		if len(s.heap) > 0 && s.heap[0].due.Before(s.armed) {
			t.Fatalf("step %d: the timer is armed for %v, after the earliest due time %v", step, s.armed, s.heap[0].due)
		}
		in := 0
		for _, rn := range rns {
			if rn.slot >= 0 {
				in++
			}
		}
		if in != len(s.heap) {
			t.Fatalf("step %d: %d renewals scheduled, heap of %d", step, in, len(s.heap))
		}
	}
	for step := range 5000 {
		rn := rns[rng.IntN(len(rns))]
		if rng.IntN(3) == 0 {
			s.cancel(rn)
		} else {
			s.set(rn, base.Add(time.Duration(rng.IntN(1000))*time.Second))
		}
		check(step)
	}
	for _, rn := range rns {
		s.cancel(rn)
	}
	check(-1)
	if len(s.heap) != 0 {
		t.Fatalf("heap of %d after every renewal was canceled", len(s.heap))
	}
}
