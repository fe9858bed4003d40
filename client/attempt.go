package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// Attempt describes one attempt of a delivery, for the hooks of a
// [Config]. Config.PrepareAttempt gets it before the attempt is sent, with
// Delivery, Number and Start set and the rest zero; Config.OnAttempt and
// Config.OnWaitEnd get it once the attempt is over, whole.
type Attempt struct {
	// Delivery is what every attempt of the delivery sends: its method and
	// content type (defaulted when it had none), its key (unencoded), its
	// exact body and its extra headers. Do not modify them: the next
	// attempt sends them too.
	Delivery

	Number     int           // 1 for the first attempt
	Start      time.Time     // when the attempt started, on the sender's clock (a signature's timestamp)
	Duration   time.Duration // on the sender's clock
	StatusCode int           // 0 when there was no response
	Replayed   bool          // the response carried Idempotent-Replayed: true
	// Err is nil for a 2xx answer, a [*StatusError] for any other answer,
	// and the transport (or PrepareAttempt) error when there was none.
	Err       error
	Retryable bool // the answer or error was one a retry may fix
	// Final is true when no attempt follows; Delay is then 0. Otherwise
	// Delay is the wait before the next attempt, taken from Retry-After
	// (clamped) when FromRetryAfter is true, else from the Backoff.
	Final          bool
	Delay          time.Duration
	FromRetryAfter bool
}

// outcome is what one attempt produced.
type outcome struct {
	start, end    time.Time
	status        int
	header        http.Header
	body          []byte
	problem       *problem.Details
	err           error // nil on 2xx
	retryable     bool
	retryAfter    time.Duration
	hasRetryAfter bool
	replayed      bool
}

// attempt sends one attempt and reads its answer.
func (s *Sender) attempt(ctx context.Context, p *pending, n int) (o outcome) {
	o.start = s.clock.Now()
	defer func() { o.end = s.clock.Now() }()

	timeout := s.attemptTimeout
	if !p.deadline.IsZero() {
		if left := p.deadline.Sub(o.start); timeout <= 0 || left < timeout {
			timeout = max(left, time.Nanosecond)
		}
	}
	actx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	req, err := http.NewRequestWithContext(actx, p.method, p.URL, bytes.NewReader(p.body))
	if err != nil { // checked by checkTarget; kept for safety
		o.err = fmt.Errorf("%w: %w", ErrInvalidDelivery, err)
		return o
	}
	if p.header != nil {
		req.Header = p.header.Clone()
	}
	req.Header.Set("Content-Type", p.contentType)
	req.Header.Set(headerIdempotencyKey, p.keyHeader)
	if s.prepare != nil {
		a := Attempt{Delivery: p.delivery(), Number: n, Start: o.start}
		if err := s.prepare(req, a); err != nil {
			o.err = fmt.Errorf("client: prepare attempt %d: %w", n, err)
			return o
		}
	}

	resp, err := s.hc.Do(req)
	if err != nil {
		o.err = err
		o.retryable = retryableError(err)
		return o
	}
	defer resp.Body.Close()
	o.status, o.header = resp.StatusCode, resp.Header
	o.replayed = strings.EqualFold(strings.TrimSpace(resp.Header.Get(headerReplayed)), "true")
	o.body, err = io.ReadAll(io.LimitReader(resp.Body, s.maxBody))
	if err != nil {
		// The answer was lost on the way: whatever the status, the
		// receiver may have acted, and a retry is answered from its record.
		o.err = fmt.Errorf("client: reading %d response: %w", resp.StatusCode, err)
		o.retryable = retryableError(err)
		return o
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return o
	}
	o.problem = parseProblem(resp.Header.Get("Content-Type"), o.body)
	o.retryAfter, o.hasRetryAfter = ParseRetryAfter(resp.Header.Get(headerRetryAfter), resp.Header.Get("Date"), s.clock.Now())
	o.retryable = RetryableStatus(resp.StatusCode, o.hasRetryAfter)
	o.err = &StatusError{
		StatusCode: resp.StatusCode,
		Header:     resp.Header,
		Body:       o.body,
		Problem:    o.problem,
	}
	return o
}
