package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// OnWaitEnd closes every wait OnAttempt opened, with the same Attempt, on
// the sender's clock after the wait: a watcher counts the waits in
// progress from the two hooks alone, whatever it needs to tell them apart.
func TestOnWaitEnd(t *testing.T) {
	clock := newFakeClock()
	tr := &scriptTransport{clock: clock, steps: []step{
		{status: 503, took: time.Second},
		{status: 429, header: map[string]string{"Retry-After": "2"}, took: time.Second},
		{status: 201, took: time.Second},
	}}
	var events []string
	s := newSender(t, tr, withClock(clock, client.Config{
		Backoff: client.Backoff{Strategy: client.Exponential, Base: time.Second},
		OnAttempt: func(a client.Attempt) {
			events = append(events, fmt.Sprintf("attempt %d final=%t delay=%v at %v", a.Number, a.Final, a.Delay, clock.Now().Sub(epoch)))
		},
		OnWaitEnd: func(a client.Attempt) {
			events = append(events, fmt.Sprintf("wait after %d delay=%v retry-after=%t ended at %v", a.Number, a.Delay, a.FromRetryAfter, clock.Now().Sub(epoch)))
		},
	}))
	if _, err := s.Deliver(context.Background(), delivery()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"attempt 1 final=false delay=1s at 1s",
		"wait after 1 delay=1s retry-after=false ended at 2s",
		"attempt 2 final=false delay=2s at 3s",
		"wait after 2 delay=2s retry-after=true ended at 5s",
		"attempt 3 final=true delay=0s at 6s",
	}
	if !slices.Equal(events, want) {
		t.Errorf("hooks called\n\t%q\nwant\n\t%q", events, want)
	}
}

// A wait cut short, by Stop or by the delivery's context, is closed too.
func TestOnWaitEndWhenTheWaitIsCut(t *testing.T) {
	for _, how := range []string{"stop", "cancel"} {
		t.Run(how, func(t *testing.T) {
			clock := &blockingClock{sleeping: make(chan time.Duration)}
			tr := &scriptTransport{steps: []step{{status: 503}}}
			var mu sync.Mutex
			var opened, closed []int
			s := newSender(t, tr, withClock(clock, client.Config{
				OnAttempt: func(a client.Attempt) {
					if !a.Final {
						mu.Lock()
						opened = append(opened, a.Number)
						mu.Unlock()
					}
				},
				OnWaitEnd: func(a client.Attempt) {
					mu.Lock()
					closed = append(closed, a.Number)
					mu.Unlock()
				},
			}))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := s.Deliver(ctx, delivery())
				done <- err
			}()
			<-clock.sleeping
			if how == "stop" {
				s.Stop()
			} else {
				cancel()
			}
			err := <-done
			var de *client.DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("Deliver: %v, want a *DeliveryError", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(opened, []int{1}) || !slices.Equal(closed, []int{1}) {
				t.Errorf("waits opened after attempts %v, closed after %v; want [1] and [1]", opened, closed)
			}
		})
	}
}
