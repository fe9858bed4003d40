package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

func TestDeadline(t *testing.T) {
	t.Run("gives up when the next attempt cannot fit", func(t *testing.T) {
		clock := newFakeClock()
		// Each attempt takes 1s; the delay is always 2s; an attempt needs 1s.
		tr := &scriptTransport{clock: clock, steps: []step{{status: 503, took: time.Second}}}
		sink := &memSink{}
		s := newSender(t, tr, withClock(clock, client.Config{
			Backoff:        client.Backoff{Strategy: client.Exponential, Base: 2 * time.Second, Cap: 2 * time.Second},
			MaxAttempts:    100,
			Deadline:       10 * time.Second,
			AttemptTimeout: time.Second,
			DeadLetter:     sink,
		}))
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrDeadline) {
			t.Fatalf("err = %v, want ErrDeadline", err)
		}
		// Attempts run over [0,1] [3,4] [6,7] [9,10]; at 10 s, 2 s of delay
		// and 1 s of attempt no longer fit.
		if res.Attempts != 4 {
			t.Errorf("attempts = %d, want 4", res.Attempts)
		}
		if got := clock.Now().Sub(epoch); got > 10*time.Second {
			t.Errorf("the delivery ran %v, past its 10s deadline", got)
		}
		if dls := sink.All(); len(dls) != 1 || dls[0].Reason != "deadline" || dls[0].Attempts != 4 || dls[0].LastStatus != 503 {
			t.Errorf("dead letters = %+v", dls)
		}
	})
	t.Run("never sleeps into it for Retry-After", func(t *testing.T) {
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503, header: map[string]string{"Retry-After": "30"}}, {status: 201}}}
		s := newSender(t, tr, withClock(clock, client.Config{Deadline: 20 * time.Second, AttemptTimeout: time.Second}))
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrDeadline) || res.Attempts != 1 {
			t.Fatalf("Deliver = %+v, %v; want ErrDeadline after 1 attempt", res, err)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("slept %v before giving up", clock.Sleeps())
		}
	})
	t.Run("the context's deadline counts too", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503, header: map[string]string{"Retry-After": "7200"}}}}
		s := newSender(t, tr, withClock(clock, client.Config{Deadline: -1, MaxRetryAfter: 2 * time.Hour}))
		if _, err := s.Deliver(ctx, delivery()); !errors.Is(err, client.ErrDeadline) {
			t.Fatalf("err = %v, want ErrDeadline", err)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("slept %v", clock.Sleeps())
		}
	})
	t.Run("the attempt timeout is cut to the deadline", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 201}}}
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{Deadline: 3 * time.Second, AttemptTimeout: time.Hour}))
		before := time.Now()
		if _, err := s.Deliver(context.Background(), delivery()); err != nil {
			t.Fatal(err)
		}
		dl, ok := tr.Requests()[0].ctx.Deadline()
		if !ok || dl.Sub(before) > 3*time.Second+time.Second {
			t.Errorf("attempt deadline %v (set %v), want about 3s from now", dl.Sub(before), ok)
		}
	})
	t.Run("with no attempt timeout the longest attempt is the need", func(t *testing.T) {
		clock := newFakeClock()
		tr := &scriptTransport{clock: clock, steps: []step{{status: 503, took: 4 * time.Second}}}
		s := newSender(t, tr, withClock(clock, client.Config{
			Backoff:        client.Backoff{Strategy: client.None},
			AttemptTimeout: -1, Deadline: 10 * time.Second, MaxAttempts: 100,
		}))
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrDeadline) || res.Attempts != 2 {
			t.Errorf("Deliver = %d attempts, %v; want ErrDeadline after 2 (0-4s, 4-8s; 8+4 > 10)", res.Attempts, err)
		}
		if _, ok := tr.Requests()[0].ctx.Deadline(); !ok {
			t.Error("the attempt is not bounded by the delivery deadline")
		}
	})
}

func TestCancellation(t *testing.T) {
	t.Run("during a wait", func(t *testing.T) {
		clock := &blockingClock{sleeping: make(chan time.Duration)}
		tr := &scriptTransport{steps: []step{{status: 503}}}
		sink := &memSink{}
		s := newSender(t, tr, withClock(clock, client.Config{DeadLetter: sink}))
		ctx, cancel := context.WithCancel(context.Background())
		type ret struct {
			res client.Result
			err error
		}
		done := make(chan ret)
		go func() {
			res, err := s.Deliver(ctx, delivery())
			done <- ret{res, err}
		}()
		<-clock.sleeping
		cancel()
		r := <-done
		if !errors.Is(r.err, context.Canceled) || r.res.Attempts != 1 || len(tr.Requests()) != 1 {
			t.Errorf("Deliver = %+v, %v; want context.Canceled after 1 attempt", r.res, r.err)
		}
		if dls := sink.All(); len(dls) != 1 || dls[0].Reason != "canceled" {
			t.Errorf("dead letters = %+v", dls)
		}
	})
	t.Run("during an attempt", func(t *testing.T) {
		started := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			close(started)
			<-req.Context().Done()
			return nil, req.Context().Err()
		})
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
		go func() { <-started; cancel() }()
		res, err := s.Deliver(ctx, delivery())
		var de *client.DeliveryError
		if !errors.As(err, &de) || de.Reason != context.Canceled || res.Attempts != 1 {
			t.Errorf("Deliver = %+v, %v; want reason context.Canceled after 1 attempt", res, err)
		}
		if errors.Is(err, client.ErrPermanent) {
			t.Errorf("a canceled delivery reported as permanent: %v", err)
		}
	})
	t.Run("context deadline during an attempt", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			cancel() // stands in for the deadline passing mid-attempt
			return nil, context.Canceled
		})
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
		res, err := s.Deliver(ctx, delivery())
		var de *client.DeliveryError
		if !errors.As(err, &de) || de.Reason != context.Canceled || res.Attempts != 1 {
			t.Errorf("Deliver = %+v, %v; want reason context.Canceled after 1 attempt", res, err)
		}
	})
	t.Run("before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tr := &scriptTransport{steps: []step{{status: 201}}}
		sink := &memSink{}
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{DeadLetter: sink}))
		res, err := s.Deliver(ctx, delivery())
		if !errors.Is(err, context.Canceled) || res.Attempts != 0 || len(tr.Requests()) != 0 {
			t.Errorf("Deliver = %+v, %v, %d requests", res, err, len(tr.Requests()))
		}
		if dls := sink.All(); len(dls) != 1 || dls[0].Attempts != 0 {
			t.Errorf("dead letters = %+v", dls)
		}
	})
}

// TestRetryAfterBeyondDeadline: a receiver whose store
// is full answers 503 store-full with the Retry-After its store gives
// (85,811 s), far past the delivery's deadline. The sender used to clamp
// it to MaxRetryAfter and retry, 60 s at a time, until the deadline: five
// minutes of a worker per feature, days for a large file. A Retry-After
// that the deadline cannot honour now ends the delivery at once, without
// a wait, and the dead letter names the reason.
func TestRetryAfterBeyondDeadline(t *testing.T) {
	storeFull := step{status: 503, header: map[string]string{
		"Retry-After":  "85811",
		"Content-Type": "application/problem+json",
	}, body: `{"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#store-full","title":"Key store full","status":503}`}
	for _, tc := range []struct {
		name string
		cfg  client.Config
		ctx  time.Duration // a deadline on the context, if not 0
		step step
	}{
		{name: "503 store-full, the default deadline", step: storeFull},
		{name: "429 just past the deadline", cfg: client.Config{Deadline: time.Minute, AttemptTimeout: time.Second},
			step: step{status: 429, header: map[string]string{"Retry-After": "60"}}},
		{name: "409 in flight past the deadline", cfg: client.Config{Deadline: time.Minute},
			step: step{status: 409, header: map[string]string{"Retry-After": "600"}}},
		{name: "the context's deadline", cfg: client.Config{Deadline: -1}, ctx: time.Hour, step: storeFull},
		{name: "an overflowing delta", step: step{status: 503, header: map[string]string{"Retry-After": "99999999999999999999999"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			clock := newFakeClock()
			tr := &scriptTransport{steps: []step{tc.step, {status: 201}}}
			sink := &memSink{}
			var hooks []client.Attempt
			cfg := withClock(clock, tc.cfg)
			cfg.DeadLetter = sink
			cfg.OnAttempt = func(a client.Attempt) { hooks = append(hooks, a) }
			s := newSender(t, tr, cfg)
			res, err := s.Deliver(ctx, delivery())
			if res.Attempts != 1 || len(clock.Sleeps()) != 0 {
				t.Errorf("%d attempts, slept %v; want 1 attempt and no wait", res.Attempts, clock.Sleeps())
			}
			if !errors.Is(err, client.ErrRetryAfterBeyondDeadline) || !errors.Is(err, client.ErrDeadline) {
				t.Errorf("err = %v; want ErrRetryAfterBeyondDeadline, a refinement of ErrDeadline", err)
			}
			var de *client.DeliveryError
			if !errors.As(err, &de) || de.ReasonName() != "retry-after-beyond-deadline" {
				t.Errorf("err = %v; want reason retry-after-beyond-deadline", err)
			}
			if dls := sink.All(); len(dls) != 1 || dls[0].Reason != "retry-after-beyond-deadline" || dls[0].LastStatus != tc.step.status {
				t.Errorf("dead letters = %+v", dls)
			}
			var se *client.StatusError
			if !errors.As(err, &se) || se.StatusCode != tc.step.status {
				t.Errorf("err = %v; want the last answer as a *StatusError", err)
			}
			if ra := tc.step.header["Retry-After"]; ra == "85811" && !strings.Contains(err.Error(), "(Retry-After 23h50m11s)") {
				t.Errorf("err = %v; want it to say how long the Retry-After is", err)
			}
			if len(hooks) != 1 || !hooks[0].Final || hooks[0].Delay != 0 {
				t.Errorf("hooks = %+v; want one final attempt", hooks)
			}
		})
	}
	t.Run("within the deadline it is honoured, clamped", func(t *testing.T) {
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503, header: map[string]string{"Retry-After": "90"}}, {status: 201}}}
		s := newSender(t, tr, withClock(clock, client.Config{}))
		if _, err := s.Deliver(context.Background(), delivery()); err != nil {
			t.Fatal(err)
		}
		if got := clock.Sleeps(); len(got) != 1 || got[0] != time.Minute {
			t.Errorf("slept %v, want [1m0s], the default MaxRetryAfter", got)
		}
	})
}
