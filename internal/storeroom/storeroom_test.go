package storeroom

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Room answers from its last sample, takes a new one only when due (or
// asked to by Soon), keeps its answer when a sample fails, and counts
// RetryAfter down from the sample.
func TestRoom(t *testing.T) {
	type answer struct {
		full bool
		wait time.Duration
		err  error
	}
	samples := make(chan answer, 1)
	taken := make(chan struct{}, 8)
	r := &Room{Every: time.Hour, Timeout: time.Second, Sample: func(context.Context) (bool, time.Duration, error) {
		a := <-samples
		taken <- struct{}{}
		return a.full, a.wait, a.err
	}}
	samples <- answer{full: true, wait: time.Minute}
	r.SampleNow(context.Background())
	<-taken
	fe := r.Full()
	if fe == nil || fe.Client || fe.RetryAfter <= 59*time.Second || fe.RetryAfter > time.Minute {
		t.Fatalf("after a full sample: %+v", fe)
	}
	r.Soon() // full already: no sample
	if fe := r.Full(); fe == nil {
		t.Fatal("a sample taken early")
	}
	select {
	case <-taken:
		t.Fatal("a sample taken while full, before it was due")
	default:
	}
	r.due.Store(0)
	samples <- answer{err: errors.New("unreachable")}
	r.Full()
	<-taken
	for r.busy.Load() {
		time.Sleep(time.Millisecond)
	}
	if fe := r.Full(); fe == nil {
		t.Fatal("a failed sample changed the answer")
	}
	r.due.Store(0)
	samples <- answer{full: false}
	r.Full()
	<-taken
	for r.busy.Load() {
		time.Sleep(time.Millisecond)
	}
	if fe := r.Full(); fe != nil {
		t.Fatalf("after a sample with room: %v", fe)
	}
	var zero Room
	if zero.Full() != nil {
		t.Fatal("the zero Room is full")
	}
}
