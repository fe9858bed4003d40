package middleware

import (
	"sync"
	"time"
)

// schedule runs the renewals' ticks when they are due, on one timer shared
// by every request of a Middleware, instead of a timer (and its closure)
// per request. A handler that finishes within Lease/3 costs a push and a
// removal in a heap under one lock; the timer is armed only when the heap's
// earliest time moves earlier, and a firing that finds nothing due just
// re-arms it.
//
// Lock order: a renewal's mu, then the schedule's mu; fire holds only the
// latter, and runs each due tick in a goroutine of its own, as
// time.AfterFunc would.
type schedule struct {
	mu    sync.Mutex
	heap  []*renewal // by due, earliest first
	t     *time.Timer
	armed time.Time // when t fires; zero when it is stopped or has fired
}

// set (re)schedules rn's tick at at.
func (s *schedule) set(rn *renewal, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rn.due = at
	if rn.slot >= 0 {
		s.fix(rn.slot)
	} else {
		rn.slot = len(s.heap)
		s.heap = append(s.heap, rn)
		s.up(rn.slot)
	}
	if !s.armed.IsZero() && !at.Before(s.armed) {
		return
	}
	s.armed = at
	if s.t == nil {
		s.t = time.AfterFunc(time.Until(at), s.fire)
	} else {
		s.t.Reset(time.Until(at))
	}
}

// cancel unschedules rn, if it is scheduled. The timer is left armed: a
// firing that finds nothing due costs little.
func (s *schedule) cancel(rn *renewal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := rn.slot; i >= 0 {
		last := len(s.heap) - 1
		s.swap(i, last)
		s.heap[last] = nil
		s.heap = s.heap[:last]
		rn.slot = -1
		if i < last {
			s.fix(i)
		}
	}
}

// fire starts the tick of every renewal due, and re-arms the timer for the
// next one.
func (s *schedule) fire() {
	s.mu.Lock()
	now := time.Now()
	var due []*renewal
	for len(s.heap) > 0 && !s.heap[0].due.After(now) {
		rn := s.heap[0]
		last := len(s.heap) - 1
		s.swap(0, last)
		s.heap[last] = nil
		s.heap = s.heap[:last]
		rn.slot = -1
		if last > 0 {
			s.down(0)
		}
		due = append(due, rn)
	}
	s.armed = time.Time{}
	if len(s.heap) > 0 {
		s.armed = s.heap[0].due
		s.t.Reset(time.Until(s.armed))
	}
	s.mu.Unlock()
	for _, rn := range due {
		go rn.tick()
	}
}

func (s *schedule) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].slot, s.heap[j].slot = i, j
}

func (s *schedule) fix(i int) {
	if !s.up(i) {
		s.down(i)
	}
}

// up moves slot i towards the root while it is due earlier than its
// parent, and reports whether it moved.
func (s *schedule) up(i int) bool {
	moved := false
	for i > 0 {
		p := (i - 1) / 2
		if !s.heap[i].due.Before(s.heap[p].due) {
			break
		}
		s.swap(i, p)
		i, moved = p, true
	}
	return moved
}

func (s *schedule) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(s.heap) {
			return
		}
		c := l
		if r := l + 1; r < len(s.heap) && s.heap[r].due.Before(s.heap[l].due) {
			c = r
		}
		if !s.heap[c].due.Before(s.heap[i].due) {
			return
		}
		s.swap(i, c)
		i = c
	}
}
