package faultproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// cue replaces the timer of a Delay with a channel the test closes.
func cue() (after func(time.Duration) <-chan time.Time, release func()) {
	ch := make(chan time.Time)
	var once sync.Once
	return func(time.Duration) <-chan time.Time { return ch }, func() { once.Do(func() { close(ch) }) }
}

// within fails the test unless ch delivers within 5 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestDelayRequest: the sender times out first, and the request still
// reaches the receiver afterwards, body intact; its answer is dropped.
// Shutdown waits for the held request to be forwarded.
func TestDelayRequest(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	clientCtx := make(chan context.Context, 1)
	p, u := start(t, b, Config{
		Delay: 1, DelayFor: time.Hour, After: after,
		OnDecision: func(_ uint64, r *http.Request, _ Fault) { clientCtx <- r.Context() },
	})
	_, _, err := post(freshClient(t, 50*time.Millisecond), u, "late")
	if !isTimeout(err) {
		t.Fatalf("err = %v, want the client's timeout", err)
	}
	if n := b.got.Load(); n != 0 {
		t.Fatalf("backend got the request before the delay ended (%d)", n)
	}
	within(t, within(t, clientCtx, "the decision").Done(), "the proxy to see the client go")
	release()
	shutdown(t, p)
	select {
	case body := <-b.bodies:
		if string(body) != "late" {
			t.Errorf("backend got body %q, want %q", body, "late")
		}
	default:
		t.Fatal("Shutdown returned before the delayed request reached the backend")
	}
	want := Stats{Requests: 1, Delay: 1, Forwarded: 1, Dropped: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

// TestDelayRequestPatientClient: a client that waits gets the answer, once
// the delay is over.
func TestDelayRequestPatientClient(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	decided := make(chan Fault, 1)
	p, u := start(t, b, Config{
		Delay: 1, DelayFor: time.Hour, After: after,
		OnDecision: func(_ uint64, _ *http.Request, f Fault) { decided <- f },
	})
	type answer struct {
		res  *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, body, err := post(freshClient(t, 0), u, "x")
		done <- answer{res, body, err}
	}()
	within(t, decided, "the decision")
	select {
	case a := <-done:
		t.Fatalf("answered before the delay ended: %+v", a)
	default:
	}
	if n := b.got.Load(); n != 0 {
		t.Fatalf("backend got the request before the delay ended (%d)", n)
	}
	release()
	a := within(t, done, "the answer")
	if a.err != nil || a.res.StatusCode != http.StatusCreated || string(a.body) != "echo:x" {
		t.Fatalf("got %+v, want 201 echo:x", a)
	}
	shutdown(t, p)
	want := Stats{Requests: 1, Delay: 1, Forwarded: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

// TestDelayResponse: the receiver does the work at once, the answer is
// held past the sender's timeout and dropped. The sender gives up only once
// the proxy holds the answer (the delay's timer has been asked for): a
// sender giving up earlier, on a wall-clock timeout, would race the forward
// and, on a loaded machine, cancel it (a ForwardError, not a Dropped).
func TestDelayResponse(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	held := make(chan struct{}, 1)
	p, u := start(t, b, Config{
		Delay: 1, DelayFor: time.Hour, DelayMode: DelayResponse,
		After: func(d time.Duration) <-chan time.Time { held <- struct{}{}; return after(d) },
	})
	ctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	done := make(chan error, 1)
	go func() {
		_, _, err := postContext(ctx, freshClient(t, 0), u, "a")
		done <- err
	}()
	within(t, b.bodies, "the request at the backend") // while the client waits
	within(t, held, "the proxy holding the answer")
	giveUp() // the sender's timeout
	if err := within(t, done, "the client"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the client's context.Canceled", err)
	}
	shutdown(t, p) // the held answer is dropped once the proxy sees the client go
	want := Stats{Requests: 1, Delay: 1, Forwarded: 1, Dropped: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

func TestDelayResponsePatientClient(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	p, u := start(t, b, Config{Delay: 1, DelayFor: time.Hour, After: after, DelayMode: DelayResponse})
	type answer struct {
		res  *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, body, err := post(freshClient(t, 0), u, "b")
		done <- answer{res, body, err}
	}()
	within(t, b.bodies, "the request at the backend")
	within(t, b.finished, "the backend's answer")
	select {
	case a := <-done:
		t.Fatalf("answered before the delay ended: %+v", a)
	default:
	}
	release()
	a := within(t, done, "the answer")
	if a.err != nil || a.res.StatusCode != http.StatusCreated || string(a.body) != "echo:b" || a.res.Header.Get("X-Backend") != "yes" {
		t.Fatalf("got %+v, want the backend's 201 echo:b", a)
	}
	shutdown(t, p)
	if st := p.Stats(); st.Dropped != 0 || st.Forwarded != 1 || st.Delay != 1 {
		t.Errorf("Stats = %+v", st)
	}
}
