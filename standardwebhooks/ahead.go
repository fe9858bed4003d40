package standardwebhooks

import "time"

// TimestampAheadError is the error of an authentic request whose
// webhook-timestamp is further ahead of the receiver's clock than the
// tolerance. It wraps ErrTimestampAhead. It is not the request's fault
// for good: the same request, headers and body, verifies once RetryAfter
// has passed on the receiver's clock, so the Handler answers it 503 with
// that Retry-After rather than 401.
type TimestampAheadError struct {
	// RetryAfter is how long until the timestamp is within the tolerance:
	// the timestamp minus the tolerance, minus now.
	RetryAfter time.Duration

	detail string
}

// Error implements error.
func (e *TimestampAheadError) Error() string { return ErrTimestampAhead.Error() + ": " + e.detail }

// Unwrap returns ErrTimestampAhead.
func (e *TimestampAheadError) Unwrap() error { return ErrTimestampAhead }
