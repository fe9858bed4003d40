// Package client is the paired sender of the geoidem middleware: it
// delivers one payload under one idempotency key, with the retry contract
// the middleware expects, and hands every delivery that ends without
// success to a dead-letter sink.
//
// It imports only the standard library, package problem (geoidem's RFC 9457
// document, which it reads answers into), the table of answers it shares
// with the middleware (docs/answers.md) and its internal clock, all
// standard library only as well, so a team that posts webhooks can use it without the middleware.
//
//	s, err := client.New(http.DefaultClient, client.Config{})
//	...
//	res, err := s.Deliver(ctx, client.Delivery{
//		URL:  "https://receiver.example/features",
//		Key:  "0f6c2a…", // the same for every attempt, and for every re-send
//		Body: body,
//	})
//
// # The idempotency key
//
// Every attempt of a delivery carries the same Idempotency-Key header and
// the same body bytes: [Sender.Deliver] copies the body once and encodes the
// key once ([EncodeKey]). A receiver that already executed the payload (the
// acknowledgement was lost) answers from its record with
// Idempotent-Replayed: true, reported as [Result.Replayed]. An empty key is
// an error ([ErrInvalidDelivery]) before any I/O.
//
// # What is retried
//
// Every 5xx (501 and 507 included: the middleware releases every 5xx, and
// an operator's fix makes the same bytes succeed), 408 and 429; every
// transport error (a reset, an EOF, a timeout, an HTTP/2 stream reset or
// GOAWAY, one it does not know), except the known permanent ones: a
// certificate or TLS failure, a request net/http refuses to send, a
// redirect the http.Client's policy refuses. Also, as a
// deliberate addition for the geoidem middleware, 409 Conflict when it
// carries Retry-After: the middleware answers so while the original
// request with the same key is still running, which is exactly what a
// retry after a lost acknowledgement can run into; once the original
// finishes, the retry gets its answer replayed. With a delivery deadline
// (the default, 5 minutes), those 409s are waits, not failures: they are
// not counted against MaxAttempts, and are retried until the deadline. The
// rule of the pairing: the sender's Deadline outlasts the receiver's lease
// (middleware.Config.Lease, 30 s by default) plus one attempt, so a key the
// receiver holds in flight for a whole lease (a release that failed, a
// claim whose reply was lost) is delivered, never dead-lettered. A 409
// without Retry-After,
// and every other 4xx (422 included), is permanent and returned at once,
// with its RFC 9457 problem document parsed ([StatusError], [problem.Details]).
//
// # When
//
// Delays come from a [Backoff]: decorrelated jitter by default,
// sleep = min(cap, uniform(base, prev × 3)) with base 500 ms and cap 30 s,
// 6 attempts in all; full jitter, equal jitter, plain exponential and no
// backoff are selectable. A Retry-After header (delta-seconds or any
// HTTP-date form) is preferred over the computed delay, clamped to
// Config.MaxRetryAfter. Delays and the delivery deadline are measured on the
// monotonic clock; the sender never sleeps past the
// deadline and gives up as soon as the next attempt cannot fit before it.
// A Retry-After is honoured, never cut short into a doomed retry: when the
// time it names (unclamped) leaves no room for an attempt before the
// deadline (a receiver whose store is full for a day answers 503
// store-full with Retry-After 85811), the delivery ends at once, without
// a wait, with [ErrRetryAfterBeyondDeadline] (dead-lettered as
// "retry-after-beyond-deadline"), so no worker is held for a wait that
// cannot succeed.
// Every wait ends when the context is canceled. A [RetryBudget] shared by
// the deliveries to one endpoint caps how much retries can multiply its
// load.
//
// # Failures and dead letters
//
// A delivery that ends without success returns a [*DeliveryError] whose
// reason is [ErrPermanent], [ErrExhausted], [ErrDeadline],
// [ErrRetryAfterBeyondDeadline], [ErrBudgetExhausted], [ErrNotJournaled]
// (an [Outbox] whose journal could not record it sent nothing, or no more
// than the first attempt when the record's sync failed) or the
// context's error, and is handed to the [DeadLetterSink], if any, with its
// payload, key, attempts, last status and error. [JSONLinesSink] writes
// them as JSON lines to a file. Two reasons are not failures of the event
// and are never dead-lettered: [ErrInterrupted] (see [Sender.Stop]) and
// [ErrSentEarlier] (an [Outbox] delivery the receiver already holds under
// its key with another payload).
//
// # The outbox: re-runs, crashes and re-drives
//
// A sender that crashes between the receiver's commit and its own
// bookkeeping, or is simply run again, must send the same bytes under the
// same key, or the receiver refuses them (422, key reused with another
// payload) or executes them twice (a new key). An [Outbox] records each
// delivery's method, URL, key, headers and exact body bytes in a [Journal],
// durably (written and synced) before anything but the first attempt
// (over a [FileJournal] the first attempt overlaps the record's sync; over
// another Journal the record is durable before it), and sends what
// the journal holds: the bytes first recorded under that identity, on every
// attempt, every re-run and every re-drive. It marks the entry done when
// the delivery ends (delivered, replayed, refused permanently, sent
// earlier or dead-lettered); [Outbox.Resume] delivers what a crash left
// pending. A re-run does not send again what the journal records as
// refused permanently ([ErrRefusedEarlier]: no attempt, no second dead
// letter), unless asked to ([Outbox.Resend], [Outbox.Redrive]); what was
// dead-lettered for any other reason, it sends again.
//
// An outbox's key names the event, and the first bytes sent under it win.
// A run whose journal does not hold the event (another host, a new
// container, a deleted journal, or one past its retention) may send it
// with other bytes (a new observation_time stamp) under the same key; the
// receiver, which holds the first send, answers 422 key-reused, and the
// outbox reports [ErrSentEarlier]: the event was sent earlier, it is not
// a permanent failure, it is not dead-lettered, and it is not executed
// twice. What that earlier send's answer was (executed, or refused), the
// receiver knows and this answer does not say.
//
// [FileJournal] is the embedded journal: JSON lines in a preallocated file,
// synced (fdatasync) per record with group commit across concurrent
// deliveries, a torn tail dropped on open, done entries forgotten after a
// retention and the file compacted.
// To stop cleanly (a SIGINT), call [Sender.Stop]: after the stop no
// attempt starts, attempts in flight run until the context ends, and what
// did not end is [ErrInterrupted], never dead-lettered, and left pending.
// [DeadLetter] carries what a re-drive needs, its [Delivery];
// [Sender.Deliver] and [Outbox.Redrive] send it again under its original
// key, byte for byte,
// and [ReadDeadLetters] reads the file a [JSONLinesSink] wrote.
//
// # Hooks and tests
//
// Config.OnAttempt observes every attempt, and Config.OnWaitEnd the end of
// the wait that follows one that is not final, with the same Attempt (for
// a count of the deliveries waiting, and on what); Config.PrepareAttempt may add
// headers to each attempt's request (a Standard Webhooks signer re-signs
// each attempt there with a fresh timestamp). Config.Rand makes the
// jitter repeatable; a test that must not really sleep runs the sender in a
// testing/synctest bubble, with an http.RoundTripper of its own.
//
// # The bytes every attempt sends
//
// A delivery's body is sent as it is, byte for byte, on every attempt, so
// a body that carries a time of ingestion (a GeoJSON Feature's
// observation_time, say, as the examples' sender stamps it) carries the
// same time on every attempt. Through an [Outbox] the bytes are written to
// the journal before the first attempt, and synced before anything after
// it, so a re-run that builds the body anew, a
// resumed crash and a re-drive of the dead letter all send the first
// bytes, under the first key; a bare [Sender] keeps them across the
// attempts of one [Sender.Deliver], and a re-drive sends the dead letter's
// bytes. A re-run without the journal that builds other bytes sends them
// under the first key: the receiver keeps the first and answers the new
// ones 422 key-reused, which an Outbox reports as [ErrSentEarlier], never
// as a permanent failure. The bytes the receiver holds are therefore
// always the first ones sent, journal or not, and a time stamped into
// them orders the observations of a feature as the sender first saw them,
// whatever order the deliveries arrive in: a receiver keeps the newest per
// feature id with package github.com/geoidem/geoidem/newest (examples/ingest
// does, on every store).
package client
