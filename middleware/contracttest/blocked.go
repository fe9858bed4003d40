package contracttest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/internal/senderclock"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

const ruleBlocked = "RULE BROKEN: a key the receiver holds in flight for a whole lease (409 with Retry-After until the lease ends) must still be delivered by the paired sender with its default retry settings, not dead-lettered: the sender's deadline must outlast the receiver's lease, and 409 with Retry-After must not use up its attempts"

// testBlockedKey: a proxy answers every attempt itself, as the middleware
// answers while a key is held in flight by a request that will never
// finish it (a release that failed, a claim whose reply was lost): 409
// request-in-flight with Retry-After: 1, until the receiver's lease
// (Target.Lease) has passed on the sender's clock since the first attempt.
// From then on it forwards. A sender with the client's default
// MaxAttempts, Deadline and AttemptTimeout must deliver the payload, once.
func (s *suite) testBlockedKey(t tester) {
	executed := s.expectExecutions(t, ruleBlocked)
	clock := new(skippingClock)
	snd := s.defaultSender(t, clock)
	var (
		mu    sync.Mutex
		start time.Time
	)
	p := newProxy(t, s.seen, s.base, func(n int, w http.ResponseWriter) action {
		now := clock.Now()
		mu.Lock()
		if n == 1 {
			start = now
		}
		blocked := now.Sub(start) < s.lease
		mu.Unlock()
		if !blocked {
			return forward
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", problem.MediaType)
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, `{"type":%q,"title":"Request in flight","status":409}`, middleware.ProblemInFlight)
		return answerSelf
	})
	key, body := s.key(t), s.payload()
	res, err := snd.deliver(t, p.url, key, body)
	blocked := 0
	for _, e := range p.exchanges() {
		if e.action == answerSelf {
			blocked++
		}
	}
	switch {
	case errors.Is(err, client.ErrDeadline):
		t.Errorf("%s\n\tthe sender's default Deadline (client.Config.Deadline) does not outlast the receiver's lease (%v) plus one attempt (Config.AttemptTimeout): the delivery ended after %d answers of 409: %s\n\tsender:%s",
			ruleBlocked, s.lease, blocked, answer(res, err), snd.attempts)
	case err != nil:
		t.Errorf("%s\n\tthe delivery ended after %d answers of 409 over the %v lease: %s\n\tsender:%s",
			ruleBlocked, blocked, s.lease, answer(res, err), snd.attempts)
	case res.Replayed || res.StatusCode < 200 || res.StatusCode > 299:
		t.Errorf("%s\n\tonce the key was free, the delivery was answered %s", ruleBlocked, answer(res, err))
	}
	executed(1)
}

// skippingClock is a scaledClock for one delivery at a time whose Now is
// real time plus what its sleeps skipped, so that the sender's deadline
// counts the waits it asked for, not the fiftieth it really waited.
type skippingClock struct {
	scaledClock
	mu      sync.Mutex
	skipped time.Duration
}

func (c *skippingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skipped)
}

func (c *skippingClock) Sleep(ctx context.Context, d time.Duration) error {
	t0 := time.Now()
	if err := c.scaledClock.Sleep(ctx, d); err != nil {
		return err
	}
	c.mu.Lock()
	c.skipped += max(d-time.Since(t0), 0)
	c.mu.Unlock()
	return nil
}

// defaultSender is a paired sender with the client's default retry
// settings (MaxAttempts, Deadline, AttemptTimeout, Backoff) on clock.
func (s *suite) defaultSender(t tester, clock *skippingClock) *sender {
	t.Helper()
	snd := &sender{hc: newClient(t, s.seen), clock: &clock.scaledClock, attempts: new(attempts), suite: s}
	cfg := client.Config{OnAttempt: snd.attempts.observe, PrepareAttempt: s.prepareAttempt()}
	senderclock.Set(&cfg, clock)
	var err error
	snd.Sender, err = client.New(snd.hc, cfg)
	if err != nil {
		t.Fatalf("contracttest: client.New: %v", err)
	}
	return snd
}
