package keystore

import (
	"time"

	"github.com/geoidem/geoidem/internal/answer"
)

// FullError is the ErrStoreFull of a store that knows when room frees up:
// errors.Is(err, ErrStoreFull) is true for it, and errors.As finds it.
type FullError struct {
	// RetryAfter is how long until room frees up by itself: the earliest
	// end of a retention or lease whose entry would make room. Zero when
	// the store cannot tell.
	RetryAfter time.Duration
	// Client is set when what is full is the share of the claim's client
	// (ClaimArgs.Client), not the whole store.
	Client bool
}

// Error implements error.
func (e *FullError) Error() string {
	what := "keystore: store full"
	if e.Client {
		what = "keystore: the client's share of the store is full"
	}
	if e.RetryAfter > 0 {
		what += "; room frees in " + answer.FormatRetryAfter(e.RetryAfter) + "s"
	}
	return what
}

// Is reports whether target is ErrStoreFull.
func (e *FullError) Is(target error) bool { return target == ErrStoreFull }
