// Package answer is the one table of the answers a geoidem receiver gives
// (the middleware, the front door, the signature verifier, the
// GeoJSON validator, a handler, examples/ingest) and of the transport
// errors between it and its sender, with what each leaves of the
// idempotency key and what the paired sender does with it. Both sides read
// it: the middleware releases a handler's answer when [Retried] says the
// sender retries it ([Retried] is the middleware's release rule), and
// package client retries by [Retried] and [TransportRetried]. docs/answers.md
// is the table as a page, for senders in any language.
//
// The rule it keeps: an answer is permanent only when the input can never
// succeed. Every other refusal (a transport failure, a timeout, contention,
// a check that depends on time) is transient: it claimed nothing or is
// released, says in Retry-After when to come back where something frees
// it, and is retried.
package answer
