package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/geoidem/geoidem/problem"
)

// ErrInvalidDelivery reports a [Delivery] that cannot be sent: an empty
// key, a key that no Idempotency-Key header can carry (it holds a byte
// outside printable ASCII, 0x20–0x7E), an unparsable or non-HTTP URL, or
// an invalid method. The error says which. Nothing was sent.
var ErrInvalidDelivery = errors.New("client: invalid delivery")

// Errors of a key that cannot be sent (see [EncodeKey]).
var (
	errNoKey      = fmt.Errorf("%w: empty idempotency key", ErrInvalidDelivery)
	errInvalidKey = fmt.Errorf("%w: idempotency key holds a byte outside printable ASCII", ErrInvalidDelivery)
)

// errInvalidConfig is wrapped by the errors of [New] and [NewRetryBudget]
// for an unusable configuration.
var errInvalidConfig = errors.New("client: invalid config")

// Reasons a delivery ended without success. Each is the Reason of a
// [DeliveryError]; test with errors.Is on the error Deliver returns.
var (
	// ErrPermanent reports an answer or an error that no retry can fix: a
	// status outside the retryable set, a 409 without Retry-After, a TLS
	// certificate error, or a PrepareAttempt failure.
	ErrPermanent = errors.New("client: permanent failure")
	// ErrExhausted reports that every allowed attempt failed with a
	// retryable answer or error.
	ErrExhausted = errors.New("client: attempts exhausted")
	// ErrDeadline reports that the delivery deadline (or the context's
	// deadline) left no room for another attempt; the sender gave up
	// without sleeping into it.
	ErrDeadline = errors.New("client: delivery deadline reached")
	// ErrRetryAfterBeyondDeadline reports an answer whose Retry-After, as
	// the receiver gave it (before Config.MaxRetryAfter clamps it), ends
	// too late for another attempt before the delivery deadline (or the
	// context's deadline): a retry sooner would be refused again, so the
	// sender gave up at once, without a wait. It is a refinement of
	// ErrDeadline: errors.Is(err, ErrDeadline) is true for it too. A
	// receiver whose store is full says so for hours (503 store-full with
	// the end of its earliest retention); re-drive the dead letter once it
	// has room.
	ErrRetryAfterBeyondDeadline error = &refinedReason{"client: Retry-After beyond the delivery deadline", ErrDeadline}
	// ErrBudgetExhausted reports that the shared [RetryBudget] had no token
	// left for a retry.
	ErrBudgetExhausted = errors.New("client: retry budget exhausted")
	// ErrNotJournaled reports that an [Outbox] could not record the
	// delivery in its journal (a full disk, a failed sync), so it sent
	// nothing: an event must not be sent unless a re-run can send the same
	// bytes again. The delivery is handed to the dead-letter sink, with its
	// key and exact bytes, ready to be re-driven. No attempt was made,
	// except over a [FileJournal] whose sync of the record failed during
	// the first attempt and that attempt was not answered 2xx: then that
	// one attempt was made, and none after it.
	ErrNotJournaled = errors.New("client: not journaled")
	// ErrSentEarlier reports that the receiver answered an [Outbox]
	// delivery 422 key-reused (a problem document whose type ends in
	// "#key-reused", see docs/problems.md): it holds another payload under the key, first
	// sent by an earlier run whose journal is gone (another host, a new
	// container, a deleted journal; the bytes then differ by the
	// observation_time stamped anew), and has executed or refused that
	// one. An outbox's key names the event and the first bytes sent under
	// it win, so the event was sent earlier: not a failure of this send,
	// and never ErrPermanent. It is not handed to the dead-letter sink
	// (a re-drive would be refused the same way), and the journal entry is
	// marked done ([OutcomeSentEarlier]). The outcome of the earlier send
	// is the receiver's, which this answer does not tell. A bare
	// [Sender.Deliver], whose keys mean what its caller says, reports the
	// same answer as ErrPermanent.
	ErrSentEarlier = errors.New("client: sent earlier with another payload")
)

// refinedReason is a reason that is also its parent reason for errors.Is.
type refinedReason struct {
	msg    string
	parent error
}

func (e *refinedReason) Error() string { return e.msg }
func (e *refinedReason) Unwrap() error { return e.parent }

// DeliveryError is the error [Sender.Deliver] returns when a delivery ends
// without success, after it has been handed to the dead-letter sink.
//
// errors.Is(err, r) is true for its Reason (one of [ErrPermanent],
// [ErrExhausted], [ErrDeadline], [ErrRetryAfterBeyondDeadline] (and then
// ErrDeadline too), [ErrBudgetExhausted], [ErrNotJournaled],
// [ErrSentEarlier] (never dead-lettered), [ErrInterrupted] (never
// dead-lettered), or the context's error when it was canceled), and errors.As reaches the last attempt's
// error: a [*StatusError] when the last attempt got a non-2xx answer, or the
// transport error. How many attempts were made, and the last answer, are
// in the [Result] returned with it (and in the message).
type DeliveryError struct {
	Reason error  // why the sender stopped
	Key    string // the idempotency key
	Err    error  // the last attempt's error; nil if no attempt was made

	attempts int
}

// Error describes the delivery, its reason and the last error.
func (e *DeliveryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client: delivery of key %q: %s after %d attempt", e.Key, reasonText(e.Reason), e.attempts)
	if e.attempts != 1 {
		b.WriteByte('s')
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// ReasonName is the reason as a word, the one [DeadLetter.Reason] holds:
// "permanent", "exhausted", "deadline", "retry-after-beyond-deadline",
// "budget", "not-journaled", "sent-earlier" and "interrupted" (never
// dead-lettered) or "canceled".
func (e *DeliveryError) ReasonName() string { return reasonName(e.Reason) }

// Unwrap returns the Reason and the last attempt's error.
func (e *DeliveryError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// reasonText is the reason without the package prefix.
func reasonText(err error) string {
	if err == nil {
		return "failed"
	}
	return strings.TrimPrefix(err.Error(), "client: ")
}

// StatusError is a non-2xx answer. Problem holds the parsed RFC 9457
// problem document when the answer was application/problem+json; Body holds
// the raw body (at most Config.MaxResponseBytes) either way.
type StatusError struct {
	StatusCode int
	Header     http.Header
	Body       []byte
	Problem    *problem.Details
}

// Error gives the status and, when there is a problem document, its title
// and detail.
func (e *StatusError) Error() string {
	msg := "client: " + strconv.Itoa(e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		msg += " " + text
	}
	if p := e.Problem; p != nil {
		if p.Title != "" {
			msg += ": " + p.Title
		}
		if p.Detail != "" {
			msg += ": " + p.Detail
		}
	}
	return msg
}
