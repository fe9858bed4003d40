package client

import (
	"context"
	"errors"
	"time"
)

// ErrInterrupted is the Reason of a delivery ended by [Sender.Stop] (a
// SIGINT, a shutdown) before it succeeded or failed: no attempt was started
// after the stop. It is not handed to the dead-letter sink, because the
// delivery did not fail; an [Outbox] leaves its entry pending in the
// journal (or records nothing, if it had not started), and a re-run sends
// it.
var ErrInterrupted = errors.New("client: interrupted")

// Stop stops the sender cleanly, for a shutdown: from then on a delivery
// starts no new attempt, neither a first one nor a retry, and a wait
// between attempts ends at once; an attempt already in flight runs to its
// end (or until its delivery's ctx is done: cancel that when the grace
// period for attempts in flight is over), and its answer counts. A
// delivery that stops so, or whose ctx is done after Stop, ends with a
// [*DeliveryError] whose Reason is [ErrInterrupted], and is not
// dead-lettered. A delivery whose ctx is canceled without a Stop fails as
// before: the context's error, dead-lettered as "canceled". Stop is safe
// for concurrent use and may be called more than once.
func (s *Sender) Stop() { s.stopOnce.Do(func() { close(s.stop) }) }

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

// sleep is the clock's Sleep that also ends when stop is closed.
func (s *Sender) sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
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

// interrupt ends a delivery stopped by Stop: not dead-lettered.
func (s *Sender) interrupt(ctx context.Context, p *pending, res Result, last outcome) (Result, error) {
	s.log.InfoContext(ctx, "client: delivery interrupted", "url", p.URL, "attempts", res.Attempts, "status", res.StatusCode)
	return res, &DeliveryError{Reason: ErrInterrupted, Key: p.Key, Err: last.err, attempts: res.Attempts}
}
