package service

import "strconv"

// A ConflictError is a feature store's refusal of a request for the state
// of other data, not for a value of the features' own: a foreign key to a
// row not there yet, a unique or exclusion constraint another row holds.
// Another write (a later delivery, deliveries arriving out of order) can
// lift it, and the same features are then stored, so it is never recorded:
// the service answers it 409 feature-conflict with Retry-After, the key
// released, and the sender retries with the same key and bytes.
type ConflictError struct {
	// Index is the feature refused, in the request's order; -1 is the
	// request as a whole.
	Index int
	// Pointer is where in the feature (a JSON pointer relative to it),
	// "" for the whole feature.
	Pointer string
	// Detail says why, for the answer; Err is the store's error, logged.
	Detail string
	Err    error
}

func (e *ConflictError) Error() string {
	if e.Index < 0 {
		return "features in conflict: " + e.Detail
	}
	return "feature " + strconv.Itoa(e.Index) + " in conflict: " + e.Detail
}

func (e *ConflictError) Unwrap() error { return e.Err }
