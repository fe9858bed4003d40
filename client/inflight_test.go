package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// inFlight is the geoidem middleware's answer while another request holds
// the key: 409 with Retry-After.
func inFlight(retryAfter string) step {
	return step{status: 409, header: map[string]string{"Retry-After": retryAfter}}
}

// A key blocked in flight at the receiver for a whole lease (30 s: a
// release that failed, a claim whose reply was lost) is answered 409 with
// Retry-After on every attempt until the lease ends. The default sender
// must keep retrying until its deadline, not count those answers against
// MaxAttempts and dead-letter the delivery after six of them.
func TestInFlightRetriedUntilDeadline(t *testing.T) {
	clock := newFakeClock()
	steps := slices.Repeat([]step{inFlight("1")}, 31) // 31 s of 409s, 1 s apart
	tr := &scriptTransport{clock: clock, steps: append(steps, step{status: 201})}
	sink := &memSink{}
	s := newSender(t, tr, withClock(clock, client.Config{DeadLetter: sink}))
	res, err := s.Deliver(context.Background(), delivery())
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("Deliver = %d after %d attempts, %v; want 201 once the key is free", res.StatusCode, res.Attempts, err)
	}
	if res.Attempts != 32 || len(sink.All()) != 0 {
		t.Errorf("attempts %d, dead letters %d; want 32 attempts, none dead-lettered", res.Attempts, len(sink.All()))
	}
}

// The 409s are not attempts against MaxAttempts, but every other failure
// still is: after the key is free, five 503s and a success fit the default
// six attempts; six 503s exhaust them.
func TestInFlightNotCountedAgainstMaxAttempts(t *testing.T) {
	for _, tc := range []struct {
		fails   int
		wantErr error
	}{{5, nil}, {6, client.ErrExhausted}} {
		clock := newFakeClock()
		steps := slices.Repeat([]step{inFlight("1")}, 20)
		steps = append(steps, slices.Repeat([]step{{status: 503}}, tc.fails)...)
		tr := &scriptTransport{clock: clock, steps: append(steps, step{status: 201})}
		s := newSender(t, tr, withClock(clock, client.Config{}))
		_, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, tc.wantErr) && (tc.wantErr != nil || err != nil) {
			t.Errorf("%d × 409 then %d × 503: Deliver err = %v, want %v", 20, tc.fails, err, tc.wantErr)
		}
	}
}

// A receiver that answers 409 for ever still ends at the deadline
// (ErrDeadline), and waits at least the backoff base between 409s even
// when told Retry-After: 0, so it never spins. Without a deadline, 409s
// count as attempts again.
func TestInFlightBounded(t *testing.T) {
	clock := newFakeClock()
	tr := &scriptTransport{clock: clock, steps: []step{inFlight("0")}}
	s := newSender(t, tr, withClock(clock, client.Config{Deadline: time.Minute, AttemptTimeout: time.Second}))
	res, err := s.Deliver(context.Background(), delivery())
	if !errors.Is(err, client.ErrDeadline) {
		t.Fatalf("Deliver err = %v, want ErrDeadline", err)
	}
	const base = 500 * time.Millisecond // the documented default of Backoff.Base
	for _, d := range clock.Sleeps() {
		if d < base {
			t.Fatalf("waited %v between 409s, want at least the backoff base %v", d, base)
		}
	}
	if res.Attempts > int(time.Minute/base)+1 {
		t.Errorf("%d attempts in a minute", res.Attempts)
	}

	clock = newFakeClock()
	tr = &scriptTransport{clock: clock, steps: []step{inFlight("1")}}
	s = newSender(t, tr, withClock(clock, client.Config{Deadline: -1}))
	res, err = s.Deliver(context.Background(), delivery())
	if !errors.Is(err, client.ErrExhausted) || res.Attempts != 6 {
		t.Fatalf("without a deadline: %d attempts, %v; want ErrExhausted after the default 6", res.Attempts, err)
	}
}
