package middleware

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type testTask struct {
	scheduleItem
	ran atomic.Int32
}

func (t *testTask) Run() { t.ran.Add(1) }

// TestHeap sets, moves and cancels many tasks on one schedule and checks
// the heap after each step: every testTask's slot is its position, no child is
// due before its parent, and the timer is armed no later than the earliest
// due time. Due times are hours ahead: nothing fires.
func TestHeap(t *testing.T) {
	var s timerSchedule
	defer func() {
		if s.t != nil {
			s.t.Stop()
		}
	}()
	base := time.Now().Add(time.Hour)
	ts := make([]*testTask, 200)
	for i := range ts {
		ts[i] = new(testTask)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(step int) {
		t.Helper()
		for i, tk := range s.heap {
			if tk.item().slot != i+1 {
				t.Fatalf("step %d: slot %d holds a testTask that says %d", step, i, tk.item().slot-1)
			}
			if i > 0 && s.less(i, (i-1)/2) {
				t.Fatalf("step %d: slot %d is due before its parent", step, i)
			}
		}
		if len(s.heap) > 0 && s.heap[0].item().due.Before(s.armed) {
			t.Fatalf("step %d: the timer is armed for %v, after the earliest due time %v", step, s.armed, s.heap[0].item().due)
		}
		in := 0
		for _, tk := range ts {
			if _, ok := s.Scheduled(tk); ok {
				in++
			}
		}
		if in != len(s.heap) {
			t.Fatalf("step %d: %d tasks scheduled, heap of %d", step, in, len(s.heap))
		}
	}
	for step := range 5000 {
		tk := ts[rng.IntN(len(ts))]
		if rng.IntN(3) == 0 {
			s.Cancel(tk)
		} else {
			s.Set(tk, base.Add(time.Duration(rng.IntN(1000))*time.Second))
		}
		check(step)
	}
	for _, tk := range ts {
		s.Cancel(tk)
	}
	check(-1)
	if len(s.heap) != 0 {
		t.Fatalf("heap of %d after every testTask was canceled", len(s.heap))
	}
}

// TestRuns: tasks run once each, when due and not before, in a bubble's
// fake time; a cancelled testTask never runs, a moved one runs at its new time.
func TestRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s timerSchedule
		start := time.Now()
		a, b, c := new(testTask), new(testTask), new(testTask)
		s.Set(a, start.Add(30*time.Millisecond))
		s.Set(b, start.Add(10*time.Millisecond))
		s.Set(c, start.Add(20*time.Millisecond))
		s.Cancel(c)
		s.Set(b, start.Add(40*time.Millisecond)) // moved later
		time.Sleep(35 * time.Millisecond)
		synctest.Wait()
		if a.ran.Load() != 1 || b.ran.Load() != 0 || c.ran.Load() != 0 {
			t.Fatalf("at 35ms: ran a %d, b %d, c %d; want 1, 0, 0", a.ran.Load(), b.ran.Load(), c.ran.Load())
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if a.ran.Load() != 1 || b.ran.Load() != 1 || c.ran.Load() != 0 {
			t.Fatalf("at 45ms: ran a %d, b %d, c %d; want 1, 1, 0", a.ran.Load(), b.ran.Load(), c.ran.Load())
		}
		if _, ok := s.Scheduled(a); ok {
			t.Error("a testTask that ran is still scheduled")
		}
	})
}
