package keystore

import (
	"time"

	"github.com/geoidem/geoidem/internal/answer"
)

// FullError is the ErrStoreFull of a store that knows when room frees up:
// errors.Is(err, ErrStoreFull) is true for it, and errors.As finds it.
type FullError struct {
	// RetryAfter is how long until room can free up by itself: the
	// earliest time that what holds the room ends (a lease, a retention,
	// a record reaching the age at which a full store may evict it; for
	// a client, the end of its window: see ClientBound), so that a retry
	// earlier than that is refused again.
	// Zero when the store cannot tell.
	RetryAfter time.Duration
	// Client is set when the claim's client (ClaimArgs.Client) is past
	// its bound on new keys, not the whole store full.
	Client bool
}

// Error implements error.
func (e *FullError) Error() string {
	what := "keystore: store full"
	if e.Client {
		what = "keystore: the client is past its bound on new keys"
	}
	if e.RetryAfter > 0 {
		what += "; room frees in " + answer.FormatRetryAfter(e.RetryAfter) + "s"
	}
	return what
}

// Is reports whether target is ErrStoreFull.
func (e *FullError) Is(target error) bool { return target == ErrStoreFull }
