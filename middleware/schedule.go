// A timerSchedule runs tasks when they are due, on one timer shared by
// every task of a timerSchedule, instead of a timer (and its closure) per task:
// the lease renewals of a geoidem middleware, one per request in flight. A
// task that is set and cancelled before it is due costs a push and a
// removal in a heap under one lock; the timer is armed only when the heap's
// earliest time moves earlier, and a firing that finds nothing due just
// re-arms it.

package middleware

import (
	"sync"
	"time"
)

// scheduleItem is what a timerSchedule keeps of a task: embed it in the task's type,
// which then satisfies scheduledTask once it has a Run method. Its zero value is an
// unscheduled item.
type scheduleItem struct {
	due  time.Time // guarded by the timerSchedule's mutex
	slot int       // position in the heap + 1; 0: not scheduled
}

func (it *scheduleItem) item() *scheduleItem { return it }

// scheduledTask is a task a timerSchedule runs: a type with a Run method that embeds
// scheduleItem.
type scheduledTask interface {
	// Run runs the task, in a goroutine of its own, once it is due.
	Run()
	item() *scheduleItem
}

// timerSchedule runs each task set on it once it is due. The zero value is ready
// to use. Lock order: whatever lock a task's owner holds around Set and
// Cancel, then the timerSchedule's; the timerSchedule calls Run holding no lock.
type timerSchedule struct {
	mu    sync.Mutex
	heap  []scheduledTask // by due, earliest first
	t     *time.Timer
	armed time.Time // when t fires; zero when it is stopped or has fired
}

// Set schedules t to run at at, moving it if it is scheduled already.
func (s *timerSchedule) Set(t scheduledTask, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := t.item()
	it.due = at
	if it.slot > 0 {
		s.fix(it.slot - 1)
	} else {
		s.heap = append(s.heap, t)
		it.slot = len(s.heap)
		s.up(it.slot - 1)
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

// Cancel unschedules t, if it is scheduled. The timer is left armed: a
// firing that finds nothing due costs little.
func (s *timerSchedule) Cancel(t scheduledTask) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := t.item()
	if it.slot == 0 {
		return
	}
	i, last := it.slot-1, len(s.heap)-1
	s.swap(i, last)
	s.heap[last] = nil
	s.heap = s.heap[:last]
	it.slot = 0
	if i < last {
		s.fix(i)
	}
}

// Scheduled reports whether t is scheduled, and when.
func (s *timerSchedule) Scheduled(t scheduledTask) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := t.item()
	return it.due, it.slot > 0
}

// fire starts every task due, and re-arms the timer for the next one.
func (s *timerSchedule) fire() {
	s.mu.Lock()
	now := time.Now()
	var due []scheduledTask
	for len(s.heap) > 0 && !s.heap[0].item().due.After(now) {
		t := s.heap[0]
		last := len(s.heap) - 1
		s.swap(0, last)
		s.heap[last] = nil
		s.heap = s.heap[:last]
		t.item().slot = 0
		if last > 0 {
			s.down(0)
		}
		due = append(due, t)
	}
	s.armed = time.Time{}
	if len(s.heap) > 0 {
		s.armed = s.heap[0].item().due
		s.t.Reset(time.Until(s.armed))
	}
	s.mu.Unlock()
	for _, t := range due {
		go t.Run()
	}
}

func (s *timerSchedule) less(i, j int) bool { return s.heap[i].item().due.Before(s.heap[j].item().due) }

func (s *timerSchedule) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].item().slot, s.heap[j].item().slot = i+1, j+1
}

func (s *timerSchedule) fix(i int) {
	if !s.up(i) {
		s.down(i)
	}
}

// up moves slot i towards the root while it is due earlier than its
// parent, and reports whether it moved.
func (s *timerSchedule) up(i int) bool {
	moved := false
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s.swap(i, p)
		i, moved = p, true
	}
	return moved
}

func (s *timerSchedule) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(s.heap) {
			return
		}
		c := l
		if r := l + 1; r < len(s.heap) && s.less(r, l) {
			c = r
		}
		if !s.less(c, i) {
			return
		}
		s.swap(i, c)
		i = c
	}
}
