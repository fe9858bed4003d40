package client

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/senderclock"
)

// Defaults of a [Config], each documented on its field.
const (
	defaultMaxAttempts    = 6
	defaultDeadline       = 5 * time.Minute
	defaultAttemptTimeout = 15 * time.Second
	defaultMaxRetryAfter  = 60 * time.Second
	defaultContentType    = "application/json"
)

// defaultMaxResponseBytes is the default of Config.MaxResponseBytes.
const defaultMaxResponseBytes = 1 << 20

// Config configures a [Sender]. Every zero field means the documented
// default; New rejects negative values where none is meaningful.
type Config struct {
	// Backoff computes the delay between attempts (default: decorrelated
	// jitter, base 500 ms, cap 30 s, multiplier 3). The "previous delay"
	// it is given is the one the sender actually waited, Retry-After
	// included.
	Backoff Backoff

	// MaxAttempts is the number of attempts in all, the first included
	// (default 6). 1 disables retries. With a Deadline, attempts answered
	// 409 with Retry-After (the receiver is still running another request
	// with the key) are not counted: they are retried until the deadline,
	// at least Backoff.Base apart (see [Sender.Deliver]).
	MaxAttempts int

	// Deadline bounds a whole delivery, from the start of its first
	// attempt (default 5 minutes; negative: no deadline other than the
	// context's). It must outlast the receiver's lease (the geoidem
	// middleware's Config.Lease, 30 s by default) plus one attempt: a key
	// the receiver holds in flight for a whole lease is answered 409 until
	// the lease ends, and a shorter deadline dead-letters the delivery. The sender never sleeps past it: before each wait it
	// gives up with [ErrDeadline] unless the wait plus a whole attempt (see
	// AttemptTimeout) still fits. An attempt's own timeout is cut short so
	// that it ends at the deadline. A deadline on the context is honoured
	// the same way.
	Deadline time.Duration

	// AttemptTimeout bounds one attempt, response body included (default
	// 15 s; negative: none, beyond the http.Client's own Timeout). It is
	// also the room the sender requires for the next attempt before the
	// deadline; with no AttemptTimeout it requires the duration of the
	// longest attempt so far. Like the context's deadline, it is a context
	// deadline, so it runs on the real clock even when a test fakes the
	// sender's clock.
	AttemptTimeout time.Duration

	// MaxRetryAfter clamps a server's Retry-After (default 60 s), so that
	// "Retry-After: 86400" cannot wedge a worker for a day. The clamped
	// value then takes the place of the computed delay. Clamping never
	// outlasts the deadline, though: a Retry-After that, as the server
	// gave it, leaves no room for an attempt before the delivery deadline
	// (or the context's) ends the delivery at once with
	// [ErrRetryAfterBeyondDeadline], without a wait, since an earlier
	// retry would only be refused again. Without any deadline, the clamped
	// waits are bounded by MaxAttempts.
	MaxRetryAfter time.Duration

	// MaxResponseBytes bounds the response body kept in a [Result] or a
	// [StatusError] (default 1 MiB); the rest is discarded.
	MaxResponseBytes int64

	// Budget, if set, is a retry budget shared with every other delivery
	// that uses it (see [RetryBudget]).
	Budget *RetryBudget

	// DeadLetter, if set, receives every delivery that ends without
	// success.
	DeadLetter DeadLetterSink

	// PrepareAttempt, if set, is called before every attempt with that
	// attempt's fresh request, after the Idempotency-Key, Content-Type and
	// Delivery.Header have been set, and the [Attempt] as far as it is
	// known before it is sent (its Delivery, Number and Start). It may add
	// or change the request's headers: this is where a signer adds
	// Standard Webhooks headers (webhook-id, webhook-timestamp,
	// webhook-signature) over a.Key and a.Body, re-signed with a fresh
	// timestamp (a.Start) for each attempt. It must not change the body or
	// the key.
	// An error ends the delivery with [ErrPermanent] before the attempt is
	// sent (it still counts as an attempt).
	PrepareAttempt func(req *http.Request, a Attempt) error

	// OnAttempt, if set, observes every attempt once it is decided what
	// follows it. It runs on the delivering goroutine and must not block.
	// When the attempt is not Final, the wait of its Delay starts as it
	// returns.
	OnAttempt func(Attempt)

	// OnWaitEnd, if set, is called with the same Attempt when the wait
	// that followed it ends: its Delay passed, or Stop or the delivery's
	// context cut it short. Every non-Final Attempt is followed by exactly
	// one OnWaitEnd, so the two hooks count the waits in progress and tell
	// why each waits (a receiver's Retry-After, a backoff) with nothing
	// else to match them by. It runs on the delivering goroutine and must
	// not block.
	OnWaitEnd func(Attempt)

	// clock supplies time and waits (nil: senderclock.System); only
	// senderclock.Set sets it, for the repository's tests.
	clock senderclock.Clock

	// Rand supplies the jitter (default: the math/rand/v2 top-level
	// functions). The sender serializes its use, so it need not be safe for
	// concurrent use. Pass rand.NewPCG(seed1, seed2) for a repeatable
	// sequence.
	Rand rand.Source

	// Logger receives one Debug record per attempt and one Warn record per
	// failed delivery (default: discard).
	Logger *slog.Logger
}
