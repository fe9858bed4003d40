package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"
)

// Delivery is one payload to deliver under one idempotency key.
type Delivery struct {
	URL    string // absolute http or https URL
	Method string // default POST
	// Key is the idempotency key, required. It is sent, encoded by
	// [EncodeKey], as the Idempotency-Key header of every attempt,
	// unchanged.
	Key string
	// Body is copied once when Deliver starts; every attempt sends exactly
	// those bytes.
	Body        []byte
	ContentType string      // default application/json
	Header      http.Header // extra headers for every attempt; Idempotency-Key and Content-Type in it are overridden
}

// Result describes how a delivery ended: how many attempts it took, and
// the last answer (StatusCode 0 if there was none). After a failure, the
// error describes that answer too: errors.As finds its [*StatusError],
// with the answer's problem document parsed.
type Result struct {
	Attempts   int // attempts made, 0 if none was
	StatusCode int
	Header     http.Header
	Body       []byte // at most Config.MaxResponseBytes
	// Replayed is true when the receiver answered from its record of an
	// earlier attempt (Idempotent-Replayed: true): the payload took effect
	// once, before this answer.
	Replayed bool
}

// Deliver sends d until it succeeds (a 2xx answer), fails permanently, or
// runs out of attempts, deadline, budget or context. Every attempt sends the
// same key and the same body bytes.
//
// It retries every 5xx, 408 and 429, every transport error but a
// certificate or TLS failure, a malformed request and a refused redirect
// (see docs/answers.md), and 409 when it carries a Retry-After header it
// can read: the geoidem middleware
// answers so while the original request with the same key is still running
// (a retry after a lost acknowledgement can overtake it), and once the
// original finishes the retry gets its recorded answer replayed. A 409
// without a readable Retry-After, and every other status, is permanent. Retry-After,
// clamped to Config.MaxRetryAfter, is preferred over the computed delay;
// one that ends too late for an attempt before the deadline ends the
// delivery at once with [ErrRetryAfterBeyondDeadline].
// With a delivery deadline, a 409 with Retry-After is not counted against
// Config.MaxAttempts: the sender waits its Retry-After (at least
// Backoff.Base) and tries again until the deadline, because the receiver
// may hold the key in flight for a whole lease before it is free again.
//
// It returns an error wrapping [ErrInvalidDelivery] before any I/O, and
// dead-letters nothing, when the key is empty or cannot be sent, or the
// URL or method is unusable. Any other failure is handed to
// the dead-letter sink and returned as a [*DeliveryError] (joined with the
// sink's error when Put failed; errors.As finds it either way); the Result
// then describes the last attempt.
func (s *Sender) Deliver(ctx context.Context, d Delivery) (Result, error) {
	return s.deliver(ctx, d, false, journalSync{})
}

// deliver is Deliver. keyNamesEvent says that d's key names the event, as
// an [Outbox]'s keys do (the first bytes sent under a key win): a 422
// key-reused answer then means the event was sent earlier with another
// payload ([ErrSentEarlier]), not that this one failed. first is the
// record's sync that the first attempt overlaps, if any (see
// journalSync).
func (s *Sender) deliver(ctx context.Context, d Delivery, keyNamesEvent bool, first journalSync) (Result, error) {
	keyHeader, method, err := keyAndMethod(d)
	if err != nil {
		return Result{}, err
	}
	if err := checkTarget(method, d.URL); err != nil {
		return Result{}, err
	}
	p := s.newPending(d, method, keyHeader)
	p.keyNamesEvent = keyNamesEvent
	p.journal = first
	if s.budget != nil {
		s.budget.deposit()
	}
	return s.run(ctx, p)
}

// newPending returns the delivery in progress of d, checked.
func (s *Sender) newPending(d Delivery, method, keyHeader string) *pending {
	contentType := d.ContentType
	if contentType == "" {
		contentType = defaultContentType
	}
	p := &pending{
		URL:         d.URL,
		Key:         d.Key,
		method:      method,
		contentType: contentType,
		keyHeader:   keyHeader,
		body:        bytes.Clone(d.Body),
		header:      d.Header.Clone(),
		start:       s.clock.Now(),
	}
	if p.body == nil {
		p.body = []byte{}
	}
	if s.deadline > 0 {
		p.deadline = p.start.Add(s.deadline)
	}
	return p
}

// notSent ends d, which was checked but never sent, for reason: like any
// failed delivery, it is handed to the dead-letter sink with cause as its
// last error.
func (s *Sender) notSent(ctx context.Context, d Delivery, reason, cause error) (Result, error) {
	keyHeader, method, err := keyAndMethod(d)
	if err != nil {
		return Result{}, err
	}
	return s.fail(ctx, s.newPending(d, method, keyHeader), Result{}, outcome{err: cause}, reason)
}

// pending is a delivery in progress.
type pending struct {
	URL, Key                       string
	method, contentType, keyHeader string
	body                           []byte
	header                         http.Header
	start                          time.Time
	deadline                       time.Time   // zero: none
	keyNamesEvent                  bool        // see deliver
	journal                        journalSync // the record's sync the first attempt overlaps (see awaitJournal)
}

// delivery is what every attempt of p sends. Its header and body are p's
// own, not copies.
func (p *pending) delivery() Delivery {
	return Delivery{URL: p.URL, Method: p.method, Key: p.Key, Body: p.body, ContentType: p.contentType, Header: p.header}
}

func (s *Sender) run(ctx context.Context, p *pending) (Result, error) {
	var (
		res     Result
		prev    time.Duration // previous delay
		longest time.Duration // longest attempt so far
		last    outcome
		counted int // attempts counted against MaxAttempts (see inFlight)
		stop    = s.stop
	)
	for n := 1; ; n++ {
		if stopped(stop) || ctx.Err() != nil {
			// Ending before the first attempt: the record's sync first,
			// and nothing sent if it failed.
			if err := s.awaitJournal(p); err != nil {
				return s.fail(ctx, p, res, outcome{err: fmt.Errorf("client: journal: %w", err)}, ErrNotJournaled)
			}
		}
		if stopped(stop) {
			return s.interrupt(ctx, p, res, last)
		}
		if err := ctx.Err(); err != nil {
			return s.fail(ctx, p, res, last, err)
		}
		last = s.attempt(ctx, p, n)
		longest = max(longest, last.end.Sub(last.start))
		res = Result{
			Attempts:   n,
			StatusCode: last.status,
			Header:     last.header,
			Body:       last.body,
			Replayed:   last.replayed,
		}
		info := Attempt{
			Delivery: p.delivery(), Number: n,
			Start: last.start, Duration: last.end.Sub(last.start),
			StatusCode: last.status, Replayed: last.replayed,
			Err: last.err, Retryable: last.retryable, Final: true,
		}
		s.log.DebugContext(ctx, "client: attempt", "url", p.URL, "attempt", n,
			"status", last.status, "duration", info.Duration, "error", last.err)
		if err := s.awaitJournal(p); err != nil {
			// The journal cannot hold the event. Sent and answered 2xx,
			// the receiver holds it; otherwise, no retry on this journal.
			s.observe(info)
			if last.err == nil {
				s.log.WarnContext(ctx, "client: journal sync failed after the delivery succeeded",
					"url", p.URL, "key", p.Key, "error", err)
				return res, nil
			}
			last.err = fmt.Errorf("client: journal: %w; first attempt: %w", err, last.err)
			return s.fail(ctx, p, res, last, ErrNotJournaled)
		}

		waiting := s.inFlight(p, last)
		if !waiting {
			counted++
		}
		var reason error
		switch {
		case last.err == nil:
			s.observe(info)
			return res, nil
		case ctx.Err() != nil && stopped(stop):
			s.observe(info)
			return s.interrupt(ctx, p, res, last)
		case ctx.Err() != nil:
			reason = ctx.Err()
		case !last.retryable && p.keyNamesEvent && keyReused(last):
			s.observe(info)
			return s.sentEarlier(ctx, p, res, last)
		case !last.retryable:
			reason = ErrPermanent
		case counted >= s.maxAttempts:
			reason = ErrExhausted
		}
		if reason != nil {
			s.observe(info)
			return s.fail(ctx, p, res, last, reason)
		}
		if stopped(stop) {
			s.observe(info)
			return s.interrupt(ctx, p, res, last)
		}

		need := s.attemptTimeout
		if need <= 0 {
			need = longest
		}
		delay := s.nextDelay(prev, n)
		if last.hasRetryAfter {
			// The receiver says no attempt before retryAfter will do.
			// Clamping keeps a long one from wedging a worker, but
			// retrying sooner than asked only to be refused again is no
			// better: a Retry-After the deadline cannot honour (a store
			// full for a day) ends the delivery now.
			if !s.fits(ctx, p, addSat(last.retryAfter, need)) {
				s.observe(info)
				// Say how long: when to re-drive the dead letter.
				last.err = fmt.Errorf("%w (Retry-After %v)", last.err, last.retryAfter)
				return s.fail(ctx, p, res, last, ErrRetryAfterBeyondDeadline)
			}
			delay = min(last.retryAfter, s.maxRetryAfter)
			info.FromRetryAfter = true
		}
		if waiting {
			delay = max(delay, s.backoff.Base) // never spin on 409s
		}
		if !s.fits(ctx, p, delay+need) {
			info.FromRetryAfter = false
			s.observe(info)
			return s.fail(ctx, p, res, last, ErrDeadline)
		}
		if s.budget != nil && !s.budget.withdraw() {
			info.FromRetryAfter = false
			s.observe(info)
			return s.fail(ctx, p, res, last, ErrBudgetExhausted)
		}
		info.Final, info.Delay = false, delay
		s.observe(info)
		err := s.sleep(ctx, stop, delay)
		if s.onWaitEnd != nil {
			s.onWaitEnd(info)
		}
		if err != nil {
			if stopped(stop) {
				return s.interrupt(ctx, p, res, last)
			}
			return s.fail(ctx, p, res, last, err)
		}
		prev = delay
	}
}

func (s *Sender) observe(a Attempt) {
	if s.onAttempt != nil {
		s.onAttempt(a)
	}
}

// nextDelay is the backoff delay before retry n.
func (s *Sender) nextDelay(prev time.Duration, n int) time.Duration {
	if s.rnd == nil {
		return s.backoff.Next(prev, n, nil)
	}
	s.rndMu.Lock()
	defer s.rndMu.Unlock()
	return s.backoff.Next(prev, n, s.rnd)
}

// fits reports whether waiting d from now stays within the delivery
// deadline and the context's deadline.
func (s *Sender) fits(ctx context.Context, p *pending, d time.Duration) bool {
	if !p.deadline.IsZero() && s.clock.Now().Add(d).After(p.deadline) {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	return true
}

// addSat returns a+b for non-negative durations, saturated at the largest
// Duration instead of overflowing (a Retry-After may be that large).
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// checkTarget validates the method and URL before any I/O.
func checkTarget(method, rawURL string) error {
	if !validMethod(method) {
		return fmt.Errorf("%w: method %q", ErrInvalidDelivery, method)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidDelivery, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%w: URL %q is not an absolute http or https URL", ErrInvalidDelivery, rawURL)
	}
	return nil
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if !isTokenByte(m[i]) || m[i] == ':' || m[i] == '/' {
			return false
		}
	}
	return true
}

// fail ends a delivery without success: it builds the DeliveryError, hands
// the delivery to the dead-letter sink and logs it.
func (s *Sender) fail(ctx context.Context, p *pending, res Result, last outcome, reason error) (Result, error) {
	derr := &DeliveryError{Reason: reason, Key: p.Key, Err: last.err, attempts: res.Attempts}
	s.log.WarnContext(ctx, "client: delivery failed", "url", p.URL, "attempts", res.Attempts,
		"status", res.StatusCode, "reason", reasonName(reason), "error", last.err)
	if s.sink == nil {
		return res, derr
	}
	d := p.delivery()
	d.Header = d.Header.Clone()
	dl := DeadLetter{
		Delivery:   d,
		Time:       s.clock.Now(),
		Attempts:   res.Attempts,
		LastStatus: res.StatusCode,
		Reason:     reasonName(reason),
		Error:      derr.Error(),
		Problem:    last.problem,
	}
	if err := s.sink.Put(context.WithoutCancel(ctx), dl); err != nil {
		return res, errors.Join(derr, fmt.Errorf("client: dead-letter sink: %w", err))
	}
	return res, derr
}

// sentEarlier ends a delivery whose key the receiver holds with another
// payload (see deliver): not a failure of the event, not dead-lettered.
func (s *Sender) sentEarlier(ctx context.Context, p *pending, res Result, last outcome) (Result, error) {
	s.log.InfoContext(ctx, "client: sent earlier with another payload", "url", p.URL, "key", p.Key, "attempts", res.Attempts)
	return res, &DeliveryError{Reason: ErrSentEarlier, Key: p.Key, Err: last.err, attempts: res.Attempts}
}

// reasonName is the DeadLetter.Reason for a DeliveryError reason.
func reasonName(reason error) string {
	switch {
	case errors.Is(reason, ErrPermanent):
		return "permanent"
	case errors.Is(reason, ErrExhausted):
		return "exhausted"
	case errors.Is(reason, ErrRetryAfterBeyondDeadline):
		return "retry-after-beyond-deadline"
	case errors.Is(reason, ErrDeadline):
		return "deadline"
	case errors.Is(reason, ErrBudgetExhausted):
		return "budget"
	case errors.Is(reason, ErrNotJournaled):
		return "not-journaled"
	case errors.Is(reason, ErrInterrupted):
		return "interrupted"
	case errors.Is(reason, ErrSentEarlier):
		return "sent-earlier"
	default:
		return "canceled"
	}
}

// keyAndMethod returns d's key as its header value and d's method (POST
// when unset).
func keyAndMethod(d Delivery) (keyHeader, method string, err error) {
	if keyHeader, err = EncodeKey(d.Key); err != nil {
		return "", "", err
	}
	if method = d.Method; method == "" {
		method = http.MethodPost
	}
	return keyHeader, method, nil
}
