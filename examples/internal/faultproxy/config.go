package faultproxy

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
)

// Fault is what the proxy does with one request.
type Fault int

// The faults, in the order in which [Config] probabilities are laid out on
// [0, 1) when a request's fault is drawn.
const (
	// None forwards the request and relays the answer untouched.
	None Fault = iota
	// LostAck forwards the request, reads the target's whole answer, and
	// then resets the client's connection without writing a byte of it:
	// the work was done, the sender sees a network error.
	LostAck
	// Inject503 answers 503 with Retry-After without forwarding.
	Inject503
	// Inject429 answers 429 with Retry-After without forwarding.
	Inject429
	// Reset resets the client's connection without forwarding.
	Reset
	// Delay holds the request (or, with [DelayResponse], its answer) for
	// [Config.DelayFor]; see [DelayMode].
	Delay
	// Down is Reset while the proxy is down ([Proxy.SetDown]). It is never
	// drawn and cannot be scheduled.
	Down

	numFaults
)

var faultNames = [numFaults]string{"none", "lost-ack", "inject-503", "inject-429", "reset", "delay", "down"}

// String returns the fault's name as it appears in the [HeaderFault] header
// and in logs: "none", "lost-ack", "inject-503", "inject-429", "reset",
// "delay" or "down".
func (f Fault) String() string {
	if f >= 0 && f < numFaults {
		return faultNames[f]
	}
	return "Fault(" + strconv.Itoa(int(f)) + ")"
}

// RetryAfterForm chooses how an injected 503 or 429 writes Retry-After.
type RetryAfterForm int

const (
	// RetryAfterEither picks delta-seconds or an HTTP-date per request, at
	// random from the request's seeded draw (the default).
	RetryAfterEither RetryAfterForm = iota
	// RetryAfterSeconds always writes delta-seconds, e.g. "2".
	RetryAfterSeconds
	// RetryAfterDate always writes an IMF-fixdate computed from
	// [Config.Now], e.g. "Wed, 02 Dec 2026 16:55:02 GMT".
	RetryAfterDate
)

// DelayMode chooses what a [Delay] holds back.
type DelayMode int

const (
	// DelayRequest (the default) reads the request body, waits
	// [Config.DelayFor], and then forwards the request even if the client
	// has given up in the meantime: the request reaches the target late,
	// possibly after the sender's retry. Only [Proxy.Close] stops it
	// before it is forwarded. The answer is relayed if the client is still
	// there.
	DelayRequest DelayMode = iota
	// DelayResponse forwards at once, holds the target's whole answer for
	// [Config.DelayFor], and then relays it, unless the client has gone
	// (or the proxy closed), in which case the answer is dropped.
	DelayResponse
)

// Defaults for the zero fields of [Config].
const (
	DefaultRetryAfter     = time.Second
	DefaultDelayFor       = time.Second
	DefaultMaxBufferBytes = 8 << 20
)

// ErrInvalidConfig is returned (wrapped) by [New] and [Proxy.SetConfig] for a
// Config they cannot use.
var ErrInvalidConfig = errors.New("faultproxy: invalid config")

// Config says which faults to inject and how. The zero Config injects
// nothing: the proxy forwards every request.
//
// The five probabilities are each in [0, 1] and sum to at most 1; the rest,
// up to 1, is the probability of [None]. A request's fault is drawn from a
// math/rand/v2 PCG source seeded with (Seed, n), where n is the request's
// number (1 for the first request the proxy reads, counting every request).
// The fault of request n is therefore a function of the Seed, the Config
// and n only: a run with the same seed whose requests arrive in the same
// order sees the same faults, however they overlap in time.
type Config struct {
	// Seed seeds the draws.
	Seed uint64

	// Probabilities of each fault, per request.
	LostAck   float64
	Inject503 float64
	Inject429 float64
	Reset     float64
	Delay     float64

	// Schedule fixes the fault of chosen request numbers, overriding the
	// draw (None forces a clean pass). Down cannot be scheduled. The map is
	// copied: changing it afterwards has no effect.
	Schedule map[uint64]Fault

	// RetryAfter is the wait announced by injected 503 and 429 (default
	// 1 s). Delta-seconds are rounded up to whole seconds; a date is
	// rounded up to the next whole second after Now() + RetryAfter.
	RetryAfter time.Duration
	// RetryAfterForm chooses delta-seconds, HTTP-date, or either.
	RetryAfterForm RetryAfterForm
	// Now is the clock for the HTTP-date form of Retry-After (default
	// time.Now).
	Now func() time.Time
	// After, if not nil, replaces the real timer of a Delay: the delay
	// ends when the channel it returns for DelayFor delivers (or is
	// closed), or when the client goes or the proxy closes, as with the
	// real timer. Tests use it to end delays on cue.
	After func(d time.Duration) <-chan time.Time

	// DelayFor is how long a Delay holds the request or answer (default
	// 1 s). Set it past the sender's attempt timeout to make the sender
	// give up.
	DelayFor time.Duration
	// DelayMode chooses between holding the request and holding the answer.
	DelayMode DelayMode

	// MaxBufferBytes bounds what the proxy holds in memory for one request
	// (default 8 MiB): the request body held by a DelayRequest, and the
	// answer held by a DelayResponse. A DelayRequest body beyond the bound
	// is streamed after the held part; a DelayResponse answer beyond it
	// aborts the client's connection.
	MaxBufferBytes int64

	// OnDecision, if not nil, is called once per request, before the fault
	// is carried out, with the request's number and fault (None included).
	// It is called from many goroutines at once and must not block.
	OnDecision func(n uint64, r *http.Request, f Fault)

	// Logger, if not nil, gets one Debug record per injected fault and one
	// Warn record per failed forward. Idempotency keys are never logged.
	Logger *slog.Logger
}

// settings is a validated Config with defaults filled in, shared read-only.
type settings struct {
	Config
	cum [Delay + 1]float64 // cumulative probabilities, indexed by fault
}

func newSettings(cfg Config) (*settings, error) {
	var errs []error
	probs := [...]struct {
		f Fault
		p float64
	}{{LostAck, cfg.LostAck}, {Inject503, cfg.Inject503}, {Inject429, cfg.Inject429}, {Reset, cfg.Reset}, {Delay, cfg.Delay}}
	s := &settings{Config: cfg}
	sum := 0.0
	for _, pr := range probs {
		if math.IsNaN(pr.p) || pr.p < 0 || pr.p > 1 {
			errs = append(errs, fmt.Errorf("%w: %s probability %v not in [0, 1]", ErrInvalidConfig, pr.f, pr.p))
			continue
		}
		sum += pr.p
		s.cum[pr.f] = sum
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("%w: fault probabilities sum to %v, more than 1", ErrInvalidConfig, sum))
	}
	for n, f := range cfg.Schedule {
		if f < None || f > Delay {
			errs = append(errs, fmt.Errorf("%w: schedule[%d] = %v cannot be scheduled", ErrInvalidConfig, n, f))
		}
	}
	if cfg.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("%w: negative RetryAfter %v", ErrInvalidConfig, cfg.RetryAfter))
	}
	if cfg.RetryAfterForm < RetryAfterEither || cfg.RetryAfterForm > RetryAfterDate {
		errs = append(errs, fmt.Errorf("%w: unknown RetryAfterForm %d", ErrInvalidConfig, cfg.RetryAfterForm))
	}
	if cfg.DelayFor < 0 {
		errs = append(errs, fmt.Errorf("%w: negative DelayFor %v", ErrInvalidConfig, cfg.DelayFor))
	}
	if cfg.DelayMode < DelayRequest || cfg.DelayMode > DelayResponse {
		errs = append(errs, fmt.Errorf("%w: unknown DelayMode %d", ErrInvalidConfig, cfg.DelayMode))
	}
	if cfg.MaxBufferBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxBufferBytes %d", ErrInvalidConfig, cfg.MaxBufferBytes))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s.Schedule = maps.Clone(cfg.Schedule)
	if s.RetryAfter == 0 {
		s.RetryAfter = DefaultRetryAfter
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.DelayFor == 0 {
		s.DelayFor = DefaultDelayFor
	}
	if s.MaxBufferBytes == 0 {
		s.MaxBufferBytes = DefaultMaxBufferBytes
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// decision is the outcome of the draw for one request.
type decision struct {
	fault    Fault
	dateForm bool // Retry-After as an HTTP-date
}

// decide draws request n's fault. It always makes the same two draws, so
// the result depends on (Seed, n) and the Config only.
func (s *settings) decide(n uint64) decision {
	rng := rand.New(rand.NewPCG(s.Seed, n))
	u := rng.Float64()
	d := decision{fault: None, dateForm: rng.IntN(2) == 1}
	switch s.RetryAfterForm {
	case RetryAfterSeconds:
		d.dateForm = false
	case RetryAfterDate:
		d.dateForm = true
	}
	if f, ok := s.Schedule[n]; ok {
		d.fault = f
		return d
	}
	for f := LostAck; f <= Delay; f++ {
		if u < s.cum[f] {
			d.fault = f
			break
		}
	}
	return d
}

// retryAfter formats the Retry-After value of an injected answer.
func (s *settings) retryAfter(dateForm bool) string {
	if !dateForm {
		return answer.FormatRetryAfter(s.RetryAfter)
	}
	at := s.Now().Add(s.RetryAfter)
	if t := at.Truncate(time.Second); !t.Equal(at) {
		at = t.Add(time.Second)
	}
	return at.UTC().Format(http.TimeFormat)
}
