package client

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/senderclock"
)

// Sender delivers payloads with the retry contract of the geoidem
// middleware. It is safe for concurrent use by multiple goroutines.
type Sender struct {
	stop           chan struct{} // closed by Stop
	stopOnce       sync.Once
	hc             *http.Client
	backoff        Backoff
	maxAttempts    int
	deadline       time.Duration
	attemptTimeout time.Duration
	maxRetryAfter  time.Duration
	maxBody        int64
	budget         *RetryBudget
	sink           DeadLetterSink
	prepare        func(*http.Request, Attempt) error
	onAttempt      func(Attempt)
	onWaitEnd      func(Attempt)
	clock          senderclock.Clock
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
// attempt.) Against a receiver behind frontdoor.Door, which resets a
// host's connections past its bound (8 by default), give hc a transport
// whose MaxConnsPerHost is under that bound: deliveries past it then wait
// for a connection in the sender, rather than meet resets at the receiver
// and spend attempts on them. New fails for an unusable cfg: a negative
// MaxAttempts, MaxRetryAfter or MaxResponseBytes, or a Backoff it rejects.
func New(hc *http.Client, cfg Config) (*Sender, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	var errs []error
	if err := cfg.Backoff.validate(); err != nil {
		errs = append(errs, err)
	}
	if cfg.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxAttempts %d", errInvalidConfig, cfg.MaxAttempts))
	}
	if cfg.MaxRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxRetryAfter %v", errInvalidConfig, cfg.MaxRetryAfter))
	}
	if cfg.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxResponseBytes %d", errInvalidConfig, cfg.MaxResponseBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Sender{
		stop:           make(chan struct{}),
		hc:             markRedirects(hc),
		backoff:        cfg.Backoff.withDefaults(),
		maxAttempts:    orDefault(cfg.MaxAttempts, defaultMaxAttempts),
		deadline:       orDefault(cfg.Deadline, defaultDeadline),
		attemptTimeout: orDefault(cfg.AttemptTimeout, defaultAttemptTimeout),
		maxRetryAfter:  orDefault(cfg.MaxRetryAfter, defaultMaxRetryAfter),
		maxBody:        orDefault(cfg.MaxResponseBytes, defaultMaxResponseBytes),
		budget:         cfg.Budget,
		sink:           cfg.DeadLetter,
		prepare:        cfg.PrepareAttempt,
		onAttempt:      cfg.OnAttempt,
		onWaitEnd:      cfg.OnWaitEnd,
		clock:          cfg.clock,
		log:            cfg.Logger,
	}
	if s.clock == nil {
		s.clock = senderclock.System{}
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
