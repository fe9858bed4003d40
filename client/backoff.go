package client

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Strategy selects how a [Backoff] spreads retries over time. The names and
// formulas follow the AWS Architecture Blog article "Exponential Backoff And
// Jitter" (Marc Brooker, 2015); n is the 1-based number of the retry.
type Strategy int

const (
	// Decorrelated jitter, the default:
	// sleep = min(cap, uniform(base, prev × multiplier)), where prev is the
	// previous sleep (base before the first retry). Every sleep lies in
	// [base, cap].
	Decorrelated Strategy = iota
	// FullJitter: sleep = uniform(0, min(cap, base × multiplier^(n-1))).
	// Sleeps lie in [0, cap]; this is the only strategy that may sleep less
	// than base.
	FullJitter
	// EqualJitter: t = min(cap, base × multiplier^(n-1)),
	// sleep = t/2 + uniform(0, t/2). Sleeps lie in [base/2, cap].
	EqualJitter
	// Exponential, without jitter: sleep = min(cap, base × multiplier^(n-1)).
	// Every sender that failed together retries together; it is here to be
	// compared against, not to be used.
	Exponential
	// None retries at once, without any wait (a Retry-After header is still
	// honoured).
	None
)

var strategyNames = [...]string{
	Decorrelated: "decorrelated",
	FullJitter:   "full",
	EqualJitter:  "equal",
	Exponential:  "exponential",
	None:         "none",
}

// String returns the strategy's name: "decorrelated", "full", "equal",
// "exponential" or "none".
func (s Strategy) String() string {
	if s >= 0 && int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// MarshalText implements [encoding.TextMarshaler] with the name returned by
// [Strategy.String]. It fails for an unknown strategy.
func (s Strategy) MarshalText() ([]byte, error) {
	if s < 0 || int(s) >= len(strategyNames) {
		return nil, fmt.Errorf("client: unknown backoff strategy %d", int(s))
	}
	return []byte(strategyNames[s]), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler]; it accepts the names
// returned by [Strategy.String], so a Strategy works with flag.TextVar.
func (s *Strategy) UnmarshalText(text []byte) error {
	for i, name := range strategyNames {
		if string(text) == name {
			*s = Strategy(i)
			return nil
		}
	}
	return fmt.Errorf("client: unknown backoff strategy %q (want decorrelated, full, equal, exponential or none)", text)
}

// Default backoff parameters, used for the zero fields of a [Backoff] (see
// its documentation).
const (
	defaultBase = 500 * time.Millisecond
	defaultCap  = 30 * time.Second
)

// defaultMultiplier is the default Multiplier of Decorrelated; the
// exponential strategies default to 2.
const defaultMultiplier = 3

// Backoff is a retry delay policy. It is a plain value, safe for concurrent
// use, and needs no HTTP: a simulation can drive it directly with
// [Backoff.Next].
//
// Zero fields mean the defaults: Strategy [Decorrelated], Base 500 ms, Cap
// 30 s, Multiplier 3 for Decorrelated and 2 for [FullJitter], [EqualJitter]
// and [Exponential] (the doubling of the AWS article). [New] rejects a
// Backoff whose base, once defaulted, is negative or above its cap, whose
// multiplier is below 1, or whose strategy is unknown.
type Backoff struct {
	Strategy   Strategy
	Base       time.Duration
	Cap        time.Duration
	Multiplier float64
}

// withDefaults returns b with its zero fields replaced by the defaults.
func (b Backoff) withDefaults() Backoff {
	if b.Base == 0 {
		b.Base = defaultBase
	}
	if b.Cap == 0 {
		b.Cap = defaultCap
	}
	if b.Multiplier == 0 {
		if b.Strategy == Decorrelated {
			b.Multiplier = defaultMultiplier
		} else {
			b.Multiplier = 2
		}
	}
	return b
}

// validate reports whether b, after its defaults are applied, is usable: a
// known strategy, a positive base, a cap no smaller than the base and a
// multiplier of at least 1.
func (b Backoff) validate() error {
	d := b.withDefaults()
	var errs []error
	if d.Strategy < 0 || int(d.Strategy) >= len(strategyNames) {
		errs = append(errs, fmt.Errorf("unknown strategy %d", int(d.Strategy)))
	}
	if d.Base < 0 {
		errs = append(errs, fmt.Errorf("negative base %v", d.Base))
	}
	if d.Cap < d.Base {
		errs = append(errs, fmt.Errorf("cap %v below base %v", d.Cap, d.Base))
	}
	if d.Multiplier < 1 || math.IsNaN(d.Multiplier) || math.IsInf(d.Multiplier, 0) {
		errs = append(errs, fmt.Errorf("multiplier %v below 1", d.Multiplier))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: backoff: %w", errInvalidConfig, err)
	}
	return nil
}

// Next returns the delay before retry number n (1 for the wait between the
// first and the second attempt), given prev, the delay used before the
// previous retry (0 before the first). Only Decorrelated depends on prev;
// the other strategies depend on n. rnd supplies the jitter; nil uses the
// math/rand/v2 top-level functions. A *rand.Rand is not safe for concurrent
// use: callers that share one must serialize calls.
//
// The result is never negative and never above the cap; for Decorrelated it
// is never below the base either. A Backoff that [New] rejects (a cap below the
// base, a multiplier below 1, …) gives clamped, unspecified results rather
// than a panic.
func (b Backoff) Next(prev time.Duration, n int, rnd *rand.Rand) time.Duration {
	b = b.withDefaults()
	if b.Base < 0 {
		b.Base = 0
	}
	if b.Cap < b.Base {
		b.Cap = b.Base
	}
	if n < 1 {
		n = 1
	}
	switch b.Strategy {
	case None:
		return 0
	case Decorrelated:
		if prev < b.Base {
			prev = b.Base
		}
		hi := mulClamp(prev, b.Multiplier)
		return min(b.Cap, uniform(rnd, b.Base, hi))
	}
	t := b.exp(n)
	switch b.Strategy {
	case FullJitter:
		return uniform(rnd, 0, t)
	case EqualJitter:
		return t/2 + uniform(rnd, 0, t-t/2)
	default: // Exponential
		return t
	}
}

// exp returns min(cap, base × multiplier^(n-1)) without overflowing.
func (b Backoff) exp(n int) time.Duration {
	f := float64(b.Base) * math.Pow(b.Multiplier, float64(n-1))
	if math.IsNaN(f) || f >= float64(b.Cap) {
		return b.Cap
	}
	return time.Duration(f)
}

// mulClamp returns d × m, saturating instead of overflowing.
func mulClamp(d time.Duration, m float64) time.Duration {
	f := float64(d) * m
	if math.IsNaN(f) || f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(f)
}

// uniform returns a duration uniformly distributed in [lo, hi].
func uniform(rnd *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	span := int64(hi - lo)
	if span == math.MaxInt64 {
		span--
	}
	if rnd == nil {
		return lo + time.Duration(rand.Int64N(span+1))
	}
	return lo + time.Duration(rnd.Int64N(span+1))
}
