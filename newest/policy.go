package newest

import (
	"errors"
	"strconv"
	"time"
)

// defaultMaxSkew is how far ahead of the receiver's clock an observation
// time may be when [Policy.MaxSkew] is not set: the tolerance Standard
// Webhooks gives a signature's timestamp, far above the error of a clock
// kept by NTP.
const defaultMaxSkew = 5 * time.Minute

// ErrAhead reports an observation time further ahead of the receiver's
// clock than its [Policy] allows.
var ErrAhead = errors.New("ahead of the receiver's clock by more than the allowed skew")

// Policy is which observation times a receiver accepts: none further ahead
// of its own clock than MaxSkew. The zero Policy accepts times up to
// five minutes ahead of time.Now.
//
// The time is the sender's, and a stored time is superseded only by a
// later one. Without a bound, one update stamped far ahead (RFC 3339 allows
// 9999-12-31T23:59:59.999999999-23:59) pins its feature: every later
// update is stale until the receiver's clock passes that time. One request
// does it, from a sender whose clock jumped or from anyone who may post.
// Checking each time before the compare ([Policy.Check]) limits the pin of
// one update to MaxSkew. It is not authentication: a sender that may
// post at all can keep sending times MaxSkew ahead, or simply wrong
// features; sign the deliveries (package standardwebhooks) to keep
// strangers out.
//
// There is no lower bound, besides [Parse]'s refusal of the first
// microsecond of year 1 (Go's zero time, which means "no time", once
// truncated to [Precision] as PostgreSQL stores it). An old time pins
// nothing: it loses to every later stamped update, and PostgreSQL's
// timestamptz holds all of RFC 3339's years, 0000 to 9999, whatever the
// offset.
//
// A refusal is a [*TimeError] wrapping ErrAhead, naming the property. It
// is not for good: the same time is accepted once the receiver's clock has
// caught up, Time.Sub(Bound) after the check. So it is no 422 to record,
// but a transient answer that says when to come back (examples/ingest: 503
// with that Retry-After, the key released), and the sender's retry then
// succeeds with the same bytes. A sender whose clock runs ahead of the
// receiver's by more than MaxSkew has its updates delayed until then, so
// MaxSkew must exceed any honest clock error. Replicas of a
// receiver whose clocks disagree move the bound by as much, no more.
type Policy struct {
	// MaxSkew is how far ahead of Now an observation time may be. Zero or
	// less means five minutes (the tolerance Standard Webhooks gives a
	// signature's timestamp): the bound cannot be turned off.
	MaxSkew time.Duration
	// Now is the receiver's clock; nil means time.Now.
	Now func() time.Time
}

// Check returns nil when t is at most MaxSkew ahead of Now, and otherwise a
// [*TimeError] wrapping [ErrAhead], whose Time is t and whose Bound is the
// latest time accepted (Now plus MaxSkew). A zero t, an observation
// without a time, is accepted: it has nothing to check.
func (p Policy) Check(t time.Time) error {
	if t.IsZero() {
		return nil
	}
	skew := p.MaxSkew
	if skew <= 0 {
		skew = defaultMaxSkew
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	bound := now().Add(skew)
	if !t.After(bound) {
		return nil
	}
	return &TimeError{Err: ErrAhead, Value: strconv.Quote(t.Format(time.RFC3339Nano)), Time: t, Bound: bound}
}

// TimeError is an observation time that a receiver refuses: for good (a
// 422) one that is not an RFC 3339 date-time ([ErrInvalidTime]: [Parse],
// [FromProperties]) or that is given twice
// ([ErrDuplicateMember]: FromProperties); until its clock catches up (a
// transient answer with Retry-After Time.Sub(Bound)) one that is too far
// ahead of the receiver's clock ([ErrAhead]: [Policy.Check]).
//
// It carries no JSON pointer: the caller knows where the value was
// (/properties/observation_time, or /features/3/properties/observation_time
// in a collection) and names it in its answer.
type TimeError struct {
	// Err is the reason, ErrInvalidTime, ErrDuplicateMember or ErrAhead;
	// errors.Is finds it through the TimeError.
	Err error
	// Value is what was refused, for a message: a JSON value as sent
	// (FromProperties), a quoted string (Parse, and Check's time
	// in RFC 3339), or for ErrDuplicateMember the member's name quoted; cut
	// after 64 bytes with "…".
	Value string
	// Time is the time refused when it parsed (ErrAhead); zero otherwise.
	Time time.Time
	// Bound is the latest time accepted when Check ran (ErrAhead): the
	// receiver's clock plus MaxSkew. Zero otherwise.
	Bound time.Time

	detail string // why, beyond Err; "" if nothing to add
}

// Error reads "<value>: <reason> (<detail>)", e.g.
// "\"yesterday\": not an RFC 3339 date-time".
func (e *TimeError) Error() string {
	reason := "invalid observation time"
	if e.Err != nil {
		reason = e.Err.Error()
	}
	s := e.Value + ": " + reason
	switch {
	case e.detail != "":
		s += " (" + e.detail + ")"
	case errors.Is(e.Err, ErrAhead):
		s += " (latest accepted: " + e.Bound.Format(time.RFC3339Nano) + ")"
	}
	return s
}

// Unwrap returns Err.
func (e *TimeError) Unwrap() error { return e.Err }
