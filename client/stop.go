package client

import (
	"context"
	"errors"
	"time"
)

// ErrInterrupted is the Reason of a delivery ended by the stop of
// [WithStop] (a SIGINT, a shutdown) before it succeeded or failed: no
// attempt was started after the stop. It is not handed to the dead-letter
// sink, because the delivery did not fail; an [Outbox] leaves its entry
// pending in the journal (or records nothing, if it had not started), and
// a re-run sends it.
var ErrInterrupted = errors.New("client: interrupted")

type stopKey struct{}

// WithStop returns a copy of ctx that carries stop, for a clean shutdown.
// Once stop is closed, a delivery under the returned context starts no new
// attempt, neither a first one nor a retry, and a wait between attempts
// ends at once; an attempt already in flight runs to its end (or until ctx
// is done: cancel ctx when the grace period for attempts in flight is
// over), and its answer counts. A delivery that stops so, or whose ctx is
// done after stop was closed, ends with a [*DeliveryError] whose Reason is
// [ErrInterrupted], and is not dead-lettered. A delivery whose ctx is
// canceled without a stop fails as before: the context's error,
// dead-lettered as "canceled".
func WithStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// stopOf returns the stop ctx carries, or nil.
func stopOf(ctx context.Context) <-chan struct{} {
	stop, _ := ctx.Value(stopKey{}).(<-chan struct{})
	return stop
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// sleep is Clock.Sleep that also ends when stop is closed.
func (s *Sender) sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	if stop == nil {
		return s.clock.Sleep(ctx, d)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-sctx.Done():
		}
	}()
	return s.clock.Sleep(sctx, d)
}

// interrupt ends a delivery stopped by WithStop: not dead-lettered.
func (s *Sender) interrupt(ctx context.Context, p *pending, res Result, last outcome) (Result, error) {
	res.Elapsed = s.clock.Now().Sub(p.start)
	s.log.InfoContext(ctx, "client: delivery interrupted", "url", p.URL, "attempts", res.Attempts, "status", res.StatusCode)
	return res, &DeliveryError{Reason: ErrInterrupted, Key: p.Key, Attempts: res.Attempts, StatusCode: res.StatusCode, Err: last.err}
}
