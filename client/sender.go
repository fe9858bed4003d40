package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of a [Config].
const (
	DefaultMaxAttempts      = 6
	DefaultDeadline         = 5 * time.Minute
	DefaultAttemptTimeout   = 15 * time.Second
	DefaultMaxRetryAfter    = 60 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	DefaultContentType      = "application/json"
)

// ErrInvalidDelivery reports a [Delivery] that cannot be sent: an
// unparsable or non-HTTP URL, or an invalid method. Nothing was sent.
var ErrInvalidDelivery = errors.New("client: invalid delivery")

// Config configures a [Sender]. Every zero field means the documented
// default; New rejects negative values where none is meaningful.
type Config struct {
	// Backoff computes the delay between attempts (default: decorrelated
	// jitter, base 500 ms, cap 30 s, multiplier 3). The "previous delay"
	// it is given is the one the sender actually waited, Retry-After
	// included.
	Backoff Backoff

	// MaxAttempts is the number of attempts in all, the first included
	// (default 6). 1 disables retries. With a Deadline, attempts answered
	// 409 with Retry-After (the receiver is still running another request
	// with the key) are not counted: they are retried until the deadline,
	// at least Backoff.Base apart (see [Sender.Deliver]).
	MaxAttempts int

	// Deadline bounds a whole delivery, from the start of its first
	// attempt (default 5 minutes; negative: no deadline other than the
	// context's). It must outlast the receiver's lease (the geoidem
	// middleware's Config.Lease, 30 s by default) plus one attempt: a key
	// the receiver holds in flight for a whole lease is answered 409 until
	// the lease ends, and a shorter deadline dead-letters the delivery. The sender never sleeps past it: before each wait it
	// gives up with [ErrDeadline] unless the wait plus a whole attempt (see
	// AttemptTimeout) still fits. An attempt's own timeout is cut short so
	// that it ends at the deadline. A deadline on the context is honoured
	// the same way.
	Deadline time.Duration

	// AttemptTimeout bounds one attempt, response body included (default
	// 15 s; negative: none, beyond the http.Client's own Timeout). It is
	// also the room the sender requires for the next attempt before the
	// deadline; with no AttemptTimeout it requires the duration of the
	// longest attempt so far. Like the context's deadline, it is a context
	// deadline, so it runs on the real clock even when Clock is a fake.
	AttemptTimeout time.Duration

	// MaxRetryAfter clamps a server's Retry-After (default 60 s), so that
	// "Retry-After: 86400" cannot wedge a worker for a day. The clamped
	// value then takes the place of the computed delay.
	MaxRetryAfter time.Duration

	// MaxResponseBytes bounds the response body kept in a [Result] or a
	// [StatusError] (default 1 MiB); the rest is discarded.
	MaxResponseBytes int64

	// Budget, if set, is a retry budget shared with every other delivery
	// that uses it (see [RetryBudget]).
	Budget *RetryBudget

	// DeadLetter, if set, receives every delivery that ends without
	// success.
	DeadLetter DeadLetterSink

	// PrepareAttempt, if set, is called before every attempt with that
	// attempt's fresh request, after the Idempotency-Key, Content-Type and
	// Delivery.Header have been set. It may add or change headers: this is
	// where a signer adds Standard Webhooks headers (webhook-id,
	// webhook-timestamp, webhook-signature), re-signed with a fresh
	// timestamp for each attempt. It must not change the body or the key.
	// An error ends the delivery with [ErrPermanent] before the attempt is
	// sent (it still counts as an attempt).
	PrepareAttempt func(req *http.Request, a AttemptStart) error

	// OnAttempt, if set, observes every attempt once it is decided what
	// follows it. It runs on the delivering goroutine and must not block.
	OnAttempt func(Attempt)

	// Clock supplies time and waits (default [SystemClock]).
	Clock Clock

	// Rand supplies the jitter (default: the math/rand/v2 top-level
	// functions). The sender serializes its use, so it need not be safe for
	// concurrent use. Pass rand.NewPCG(seed1, seed2) for a repeatable
	// sequence.
	Rand rand.Source

	// Logger receives one Debug record per attempt and one Warn record per
	// failed delivery (default: discard).
	Logger *slog.Logger
}

// AttemptStart describes an attempt about to be sent, for
// Config.PrepareAttempt.
type AttemptStart struct {
	Number int       // 1 for the first attempt
	Key    string    // the idempotency key, unencoded
	Body   []byte    // the body the attempt sends; do not modify
	Time   time.Time // now, on the sender's clock (use it as a signature timestamp)
}

// Attempt describes one finished attempt, for Config.OnAttempt.
type Attempt struct {
	Number     int // 1 for the first attempt
	Key        string
	URL        string
	Start      time.Time     // on the sender's clock
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

// Result describes how a delivery ended. After a failure it describes the
// last attempt (StatusCode 0 if there was no answer).
type Result struct {
	Attempts   int // attempts made, 0 if none was
	StatusCode int
	Header     http.Header
	Body       []byte // at most Config.MaxResponseBytes
	// Replayed is true when the receiver answered from its record of an
	// earlier attempt (Idempotent-Replayed: true): the payload took effect
	// once, before this answer.
	Replayed bool
	Problem  *Problem      // the last answer's problem document, if it had one
	Elapsed  time.Duration // on the sender's clock
}

// Sender delivers payloads with the retry contract of the geoidem
// middleware. It is safe for concurrent use by multiple goroutines.
type Sender struct {
	hc             *http.Client
	backoff        Backoff
	maxAttempts    int
	deadline       time.Duration
	attemptTimeout time.Duration
	maxRetryAfter  time.Duration
	maxBody        int64
	budget         *RetryBudget
	sink           DeadLetterSink
	prepare        func(*http.Request, AttemptStart) error
	onAttempt      func(Attempt)
	clock          Clock
	log            *slog.Logger

	rndMu sync.Mutex
	rnd   *rand.Rand // nil: top-level functions
}

// New returns a Sender that sends through hc (nil: http.DefaultClient).
// hc is the only retry layer: do not give it a retrying transport, or
// attempts multiply. Its Timeout, if any, still bounds each attempt. (One
// exception is built in and harmless: net/http's Transport re-sends a
// request whose reused connection turns out to be dead before any byte of
// an answer, which it allows for requests carrying Idempotency-Key; the
// re-send carries the same key, headers and bytes, and is not counted as an
// attempt.) New fails with [ErrInvalidConfig] for an unusable cfg.
func New(hc *http.Client, cfg Config) (*Sender, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	var errs []error
	if err := cfg.Backoff.Validate(); err != nil {
		errs = append(errs, err)
	}
	if cfg.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxAttempts %d", ErrInvalidConfig, cfg.MaxAttempts))
	}
	if cfg.MaxRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxRetryAfter %v", ErrInvalidConfig, cfg.MaxRetryAfter))
	}
	if cfg.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxResponseBytes %d", ErrInvalidConfig, cfg.MaxResponseBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Sender{
		hc:             hc,
		backoff:        cfg.Backoff.withDefaults(),
		maxAttempts:    orDefault(cfg.MaxAttempts, DefaultMaxAttempts),
		deadline:       orDefault(cfg.Deadline, DefaultDeadline),
		attemptTimeout: orDefault(cfg.AttemptTimeout, DefaultAttemptTimeout),
		maxRetryAfter:  orDefault(cfg.MaxRetryAfter, DefaultMaxRetryAfter),
		maxBody:        orDefault(cfg.MaxResponseBytes, DefaultMaxResponseBytes),
		budget:         cfg.Budget,
		sink:           cfg.DeadLetter,
		prepare:        cfg.PrepareAttempt,
		onAttempt:      cfg.OnAttempt,
		clock:          cfg.Clock,
		log:            cfg.Logger,
	}
	if s.clock == nil {
		s.clock = SystemClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Rand != nil {
		s.rnd = rand.New(cfg.Rand)
	}
	return s, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Deliver sends d until it succeeds (a 2xx answer), fails permanently, or
// runs out of attempts, deadline, budget or context. Every attempt sends the
// same key and the same body bytes.
//
// It retries 429, 500, 502, 503 and 504, connection errors and timeouts,
// and 409 when it carries a Retry-After header: the geoidem middleware
// answers so while the original request with the same key is still running
// (a retry after a lost acknowledgement can overtake it), and once the
// original finishes the retry gets its recorded answer replayed. A 409
// without Retry-After, and every other status, is permanent. Retry-After,
// clamped to Config.MaxRetryAfter, is preferred over the computed delay.
// With a delivery deadline, a 409 with Retry-After is not counted against
// Config.MaxAttempts: the sender waits its Retry-After (at least
// Backoff.Base) and tries again until the deadline, because the receiver
// may hold the key in flight for a whole lease before it is free again.
//
// It returns an error before any I/O, and dead-letters nothing, when the
// key is empty or invalid ([ErrNoKey], [ErrInvalidKey]) or the URL or
// method is unusable ([ErrInvalidDelivery]). Any other failure is handed to
// the dead-letter sink and returned as a [*DeliveryError] (joined with the
// sink's error when Put failed; errors.As finds it either way); the Result
// then describes the last attempt.
func (s *Sender) Deliver(ctx context.Context, d Delivery) (Result, error) {
	keyHeader, err := EncodeKey(d.Key)
	if err != nil {
		return Result{}, err
	}
	method := d.Method
	if method == "" {
		method = http.MethodPost
	}
	if err := checkTarget(method, d.URL); err != nil {
		return Result{}, err
	}
	contentType := d.ContentType
	if contentType == "" {
		contentType = DefaultContentType
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
	if s.budget != nil {
		s.budget.Deposit()
	}
	return s.run(ctx, p)
}

// pending is a delivery in progress.
type pending struct {
	URL, Key                       string
	method, contentType, keyHeader string
	body                           []byte
	header                         http.Header
	start                          time.Time
	deadline                       time.Time // zero: none
}

// outcome is what one attempt produced.
type outcome struct {
	start, end    time.Time
	status        int
	header        http.Header
	body          []byte
	problem       *Problem
	err           error // nil on 2xx
	retryable     bool
	retryAfter    time.Duration
	hasRetryAfter bool
	replayed      bool
}

func (s *Sender) run(ctx context.Context, p *pending) (Result, error) {
	var (
		res     Result
		prev    time.Duration // previous delay
		longest time.Duration // longest attempt so far
		last    outcome
		counted int // attempts counted against MaxAttempts (see inFlight)
	)
	for n := 1; ; n++ {
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
			Problem:    last.problem,
		}
		info := Attempt{
			Number: n, Key: p.Key, URL: p.URL,
			Start: last.start, Duration: last.end.Sub(last.start),
			StatusCode: last.status, Replayed: last.replayed,
			Err: last.err, Retryable: last.retryable, Final: true,
		}
		s.log.DebugContext(ctx, "client: attempt", "url", p.URL, "attempt", n,
			"status", last.status, "duration", info.Duration, "error", last.err)

		waiting := s.inFlight(p, last)
		if !waiting {
			counted++
		}
		var reason error
		switch {
		case last.err == nil:
			s.observe(info)
			res.Elapsed = s.clock.Now().Sub(p.start)
			return res, nil
		case ctx.Err() != nil:
			reason = ctx.Err()
		case !last.retryable:
			reason = ErrPermanent
		case counted >= s.maxAttempts:
			reason = ErrExhausted
		}
		if reason != nil {
			s.observe(info)
			return s.fail(ctx, p, res, last, reason)
		}

		delay := s.nextDelay(prev, n)
		if last.hasRetryAfter {
			delay = min(last.retryAfter, s.maxRetryAfter)
			info.FromRetryAfter = true
		}
		if waiting {
			delay = max(delay, s.backoff.Base) // never spin on 409s
		}
		need := s.attemptTimeout
		if need <= 0 {
			need = longest
		}
		if !s.fits(ctx, p, delay+need) {
			info.FromRetryAfter = false
			s.observe(info)
			return s.fail(ctx, p, res, last, ErrDeadline)
		}
		if s.budget != nil && !s.budget.Withdraw() {
			info.FromRetryAfter = false
			s.observe(info)
			return s.fail(ctx, p, res, last, ErrBudgetExhausted)
		}
		info.Final, info.Delay = false, delay
		s.observe(info)
		if err := s.clock.Sleep(ctx, delay); err != nil {
			return s.fail(ctx, p, res, last, err)
		}
		prev = delay
	}
}

// inFlight reports whether an attempt was answered 409 with Retry-After,
// the geoidem middleware's "another request with this key is running":
// with a delivery deadline, such an attempt is a wait for the key, not a
// failure, and is not counted against MaxAttempts. The receiver may hold a
// key in flight for its whole lease (a release that failed, a claim whose
// reply was lost), and a sender that counted those answers would
// dead-letter a delivery that the receiver would accept a moment later.
// The deadline bounds the waiting instead; without one, they count.
func (s *Sender) inFlight(p *pending, o outcome) bool {
	return o.status == http.StatusConflict && o.hasRetryAfter && !p.deadline.IsZero()
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
	req.Header.Set(HeaderIdempotencyKey, p.keyHeader)
	if s.prepare != nil {
		a := AttemptStart{Number: n, Key: p.Key, Body: p.body, Time: o.start}
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
	o.replayed = strings.EqualFold(strings.TrimSpace(resp.Header.Get(HeaderReplayed)), "true")
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
	o.retryAfter, o.hasRetryAfter = ParseRetryAfter(resp.Header.Get(HeaderRetryAfter), resp.Header.Get("Date"), s.clock.Now())
	o.retryable = RetryableStatus(resp.StatusCode, o.hasRetryAfter)
	o.err = &StatusError{
		StatusCode: resp.StatusCode,
		Status:     resp.Status,
		Header:     resp.Header,
		Body:       o.body,
		Problem:    o.problem,
	}
	return o
}

// RetryableStatus reports whether the sender retries an answer with this
// status: 429, 500, 502, 503 and 504 always, and 409 when it carries a
// valid Retry-After header (hasRetryAfter), which is how the geoidem
// middleware says "the original request with this key is still running,
// come back later". Every other status is permanent.
func RetryableStatus(code int, hasRetryAfter bool) bool {
	switch code {
	case http.StatusTooManyRequests,
		http.StatusInternalServerError,
		http.StatusBadGateway,
		http.StatusServiceUnavailable,
		http.StatusGatewayTimeout:
		return true
	case http.StatusConflict:
		return hasRetryAfter
	}
	return false
}

// retryableError reports whether a transport error is a connection error or
// a timeout, which a retry may fix. Certificate and TLS handshake failures,
// malformed requests and redirect-policy errors are permanent. The caller
// has already ruled out the delivery's own context ending.
func retryableError(err error) bool {
	var (
		certErr     *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidErr  x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
	)
	if errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) ||
		errors.As(err, &invalidErr) || errors.As(err, &recordErr) {
		return false
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // *url.Error is itself a net.Error; judge what it wraps
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), // the attempt's own timeout
		errors.As(err, &ne),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
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
	res.Elapsed = s.clock.Now().Sub(p.start)
	derr := &DeliveryError{
		Reason:     reason,
		Key:        p.Key,
		Attempts:   res.Attempts,
		StatusCode: res.StatusCode,
		Err:        last.err,
	}
	s.log.WarnContext(ctx, "client: delivery failed", "url", p.URL, "attempts", res.Attempts,
		"status", res.StatusCode, "reason", reasonName(reason), "error", last.err)
	if s.sink == nil {
		return res, derr
	}
	dl := DeadLetter{
		Time:        s.clock.Now(),
		URL:         p.URL,
		Method:      p.method,
		Key:         p.Key,
		ContentType: p.contentType,
		Header:      p.header.Clone(),
		Payload:     p.body,
		Attempts:    res.Attempts,
		LastStatus:  res.StatusCode,
		Reason:      reasonName(reason),
		Error:       derr.Error(),
		Problem:     res.Problem,
	}
	if err := s.sink.Put(context.WithoutCancel(ctx), dl); err != nil {
		return res, errors.Join(derr, fmt.Errorf("client: dead-letter sink: %w", err))
	}
	return res, derr
}

// reasonName is the DeadLetter.Reason for a DeliveryError reason.
func reasonName(reason error) string {
	switch {
	case errors.Is(reason, ErrPermanent):
		return "permanent"
	case errors.Is(reason, ErrExhausted):
		return "exhausted"
	case errors.Is(reason, ErrDeadline):
		return "deadline"
	case errors.Is(reason, ErrBudgetExhausted):
		return "budget"
	default:
		return "canceled"
	}
}
