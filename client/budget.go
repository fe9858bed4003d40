package client

import (
	"fmt"
	"math"
	"sync"
)

// The defaults of NewRetryBudget's zero arguments.
const (
	defaultBudgetRatio = 0.1
	defaultBudgetBurst = 10
)

// RetryBudget is a token bucket that caps retry amplification across every
// delivery that shares it. Each delivery deposits ratio tokens when it
// starts; each retry (every attempt after the first) withdraws one token,
// and a delivery whose retry finds less than one token gives up with
// [ErrBudgetExhausted]. So over any stretch of time, retries ≤ burst +
// ratio × deliveries, and an outage of the endpoint multiplies its load by
// at most 1 + ratio once the burst is spent, instead of by the number of
// attempts.
//
// Budgets count deliveries, not time, so they stay deterministic under a
// fake clock. Share one RetryBudget per receiving endpoint, through one
// [Sender] or several. It is safe for concurrent use.
type RetryBudget struct {
	mu     sync.Mutex
	tokens int64 // all three in millionths of a token, so 10 × 0.1 is exactly 1
	ratio  int64
	burst  int64
}

// micro is one token in the unit of RetryBudget's fields.
const micro = 1_000_000

// NewRetryBudget returns a full budget, as rate.NewLimiter takes a rate
// and a burst: ratio is the number of tokens each delivery deposits when it
// starts (0 means 0.1: at most one retry for every ten deliveries in the
// long run), burst the capacity of the bucket and its content when it is
// created (0 means 10). It fails for a negative, NaN or absurdly large
// (over 1e12) ratio or burst.
func NewRetryBudget(ratio, burst float64) (*RetryBudget, error) {
	if ratio == 0 {
		ratio = defaultBudgetRatio
	}
	if burst == 0 {
		burst = defaultBudgetBurst
	}
	for name, v := range map[string]float64{"ratio": ratio, "burst": burst} {
		if v < 0 || math.IsNaN(v) || v > 1e12 {
			return nil, fmt.Errorf("%w: retry budget %s %v", errInvalidConfig, name, v)
		}
	}
	b := int64(math.Round(burst * micro))
	return &RetryBudget{tokens: b, ratio: int64(math.Round(ratio * micro)), burst: b}, nil
}

// deposit adds ratio tokens, up to burst. The sender calls it once per
// delivery, before the first attempt.
func (b *RetryBudget) deposit() {
	b.mu.Lock()
	b.tokens = min(b.burst, b.tokens+b.ratio)
	b.mu.Unlock()
}

// withdraw takes one token for a retry and reports whether there was one.
// When it returns false it took nothing.
func (b *RetryBudget) withdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < micro {
		return false
	}
	b.tokens -= micro
	return true
}

// available returns the tokens now in the bucket.
func (b *RetryBudget) available() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return float64(b.tokens) / micro
}
