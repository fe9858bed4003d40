package middleware

import (
	"context"
	"log/slog"
	"time"
)

// Outcome is what the middleware did with one request of a covered method
// (Config.Methods): one that carried a key, or one refused because it
// carried none or a malformed one (Rejected).
type Outcome int

const (
	// Executed: the handler ran and its response was recorded for replay.
	Executed Outcome = iota + 1
	// Released: the handler ran and answered 5xx, 408, 429 or 409 with
	// Retry-After, or panicked before a final answer that is not
	// retryable, or returned without writing anything after its lease was
	// lost; its claim was released so that a retry runs it again.
	Released
	// Replayed: a recorded response was replayed.
	Replayed
	// InFlight: the original request was still running; answered 409.
	InFlight
	// Mismatch: the key was reused with a different payload; answered 422.
	Mismatch
	// Invalid: the validator rejected the body; its answer was sent and
	// the claim released, not recorded.
	Invalid
	// Rejected: the key was missing or malformed, or the body too large or
	// unreadable; answered 400 or 413 without touching the store.
	Rejected
	// StoreError: the key store failed or timed out; answered 503 and the
	// handler did not run. Or, with the status the handler sent, the
	// handler ran but its record could not be written within the request:
	// it is retried in the background (see Middleware.Shutdown).
	StoreError
	// LeaseLost: the handler ran but its lease ended before its response could
	// be recorded (another request may have taken the key over).
	LeaseLost
	// Canceled: the request's context was done (the client left, or the
	// server gave up on it) before its claim returned: the key was released
	// at once and the handler did not run.
	Canceled
	// Limited: the request's client (Config.Client) was past its bound on
	// new keys in the key store (keystore.FullError with Client set);
	// answered 429 client-full and the handler did not run. A refusal of
	// the client's, not a failure of the store.
	Limited
)

var outcomeNames = [...]string{
	Executed: "executed", Released: "released", Replayed: "replayed", InFlight: "in_flight",
	Mismatch: "mismatch", Invalid: "invalid", Rejected: "rejected", StoreError: "store_error",
	LeaseLost: "lease_lost", Canceled: "canceled", Limited: "limited",
}

// String returns the outcome's name in snake case, suitable as a metric label.
func (o Outcome) String() string {
	if o > 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Outcomes lists every Outcome, for registering metrics up front.
func Outcomes() []Outcome {
	return []Outcome{Executed, Released, Replayed, InFlight, Mismatch, Invalid, Rejected, StoreError, LeaseLost, Canceled, Limited}
}

// Event describes one request's outcome, for an Observer. There is one
// per request of a covered method, those without a key included (Outcome
// Rejected, Key empty); none for other methods, which pass through.
type Event struct {
	Outcome Outcome
	// Key is the stored (hashed) key; empty for Rejected requests.
	Key string
	// Status is the HTTP status the client was answered: the status the
	// handler actually sent, even when it panicked afterwards (500 when it
	// panicked before sending any, 0 when it hijacked the connection without
	// writing a status).
	Status int
	// Latency is the time from the middleware receiving the request to its
	// outcome being settled (after the record was written, for Executed).
	Latency time.Duration
	// TookOver is true when the request acquired its key by taking over the
	// expired lease of an earlier one.
	TookOver bool
	// Err is the store or validation error behind the outcome, if any, or
	// ErrHandlerPanicked.
	Err error
	// ClockStep, when not zero, is how far the store's clock disagreed with
	// the middleware's reckoning of the lease while the handler ran: the
	// remaining lease the store reported on a renewal (see
	// keystore.Store.Extend) minus the middleware's own reckoning,
	// on its monotonic clock. It is set only beyond a tolerance
	// (StoreTimeout + Lease/10), and then also logged as an error. Negative:
	// the store's clock stepped forward, which ends leases early (a
	// duplicate may then run alongside the original); positive: it stepped
	// back. Store hosts must slew their clocks, not step them.
	ClockStep time.Duration
	// Context is the request's context, for an Observer that links the
	// outcome to the request's trace (its span, its deadline). It may be
	// done by the time the Observer runs; do not keep it.
	Context context.Context
}

func (m *Middleware) done(ctx context.Context, ev Event, start time.Time) {
	ev.Latency = time.Since(start)
	ev.Context = ctx
	if m.observe != nil {
		m.observe(ev)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// The request's context: a log handler can add the request's trace id.
	if m.log.Enabled(ctx, slog.LevelDebug) {
		m.log.LogAttrs(ctx, slog.LevelDebug, "idempotency outcome",
			slog.String("outcome", ev.Outcome.String()), slog.String("key", ev.Key), slog.Int("status", ev.Status), slog.Duration("latency", ev.Latency))
	}
}
