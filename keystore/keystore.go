// Package keystore defines the contract between the geoidem middleware and the
// stores that hold idempotency keys.
//
// A [Store] does only atomic primitives on one key at a time; every policy
// decision (what to replay, when to release, how long to keep a record) lives
// in the middleware. The conformance suite in package keystoretest is the
// executable definition of a correct Store: every implementation must pass
// keystoretest.Run.
//
// # Life of a key
//
// A key is absent, in flight, or completed:
//
//   - [Store.Claim] on an absent key acquires it: the store creates an
//     in-flight entry holding the caller's [Fingerprint], issues a fresh
//     [Token] and starts a lease. Claim on an in-flight key whose lease is
//     still running reports it as in flight with the remaining lease; Claim on
//     an in-flight key whose lease has expired takes it over, exactly as if it
//     were absent, and issues a new token. Claim on a completed key reports the
//     stored [Record].
//   - [Store.Extend] renews the lease of the token that holds the key.
//   - [Store.Complete] turns the in-flight entry into a completed one that
//     keeps its Record for the given retention.
//   - [Store.Release] deletes the in-flight entry, so the key is absent again.
//
// A token holds its key from the Claim that issued it until the first of:
// its lease expires, another Claim takes the key over, or the token is used
// to Complete or Release. After that, Extend, Complete and Release with the
// token fail with an error for which errors.Is(err, [ErrLeaseLost]) is true,
// and change nothing. This is the fencing rule: an owner whose lease ran out
// can never overwrite the work of the request that took the key over.
//
// # Repeats of a token's own work
//
// Three repeats are not lost leases, because the token's work is done, not
// undone: each succeeds and changes nothing.
//
//   - Extend by the token that completed the key, while its record is kept:
//     a lease renewal that meets its own request's commit (a record stored by
//     pgstore's InTx or CompleteTx in the handler's transaction) succeeds,
//     and the record keeps its retention.
//   - Complete by the token that completed the key, with an equal record
//     (same status, header fields and values in order, and body; a nil
//     header or body equals an empty one): a client library's retry of a
//     Complete that was applied before the connection broke succeeds. With
//     a different record it fails with ErrLeaseLost.
//   - Release by the token that released the key, until the key is claimed
//     again (stores keep the mark for a short grace, at least a minute for
//     those in this module).
//
// So ErrLeaseLost always means: this token's hold was ended by something
// other than its own Complete or Release, and the call changed nothing.
//
// Leases and retention are judged by the store's clock (the database or
// Redis server clock for networked stores), never by the clocks of the
// application servers, which may disagree.
//
// # Operating a store
//
// A store may also offer [Admin], found by type assertion: an operator's
// view of one entry (Inspect), the freeing of a key left in flight by a
// process that died (Free, only once its lease has run out unless forced),
// the deletion of a completed record (Forget) and counts (Summarize). The
// geoidem command's keys subcommand uses it; memstore, redisstore and
// pgstore have it.
//
// # Writing a store
//
// A store that keeps records as bytes encodes them with [AppendRecord] and
// decodes them with [DecodeRecord]: one stable encoding for every store, in
// which equal records encode equally. Such a store may also offer
// [EncodedCompleter]: the middleware then writes a response straight into
// its encoding and hands the store those bytes (memstore does). A store's Claim should issue the
// token its caller chose, when the context carries one
// ([ClaimTokenFromContext]): the middleware then releases a key whose
// claim timed out after acquiring it, instead of leaving it in flight for
// the whole lease. Run package keystoretest's Run against it.
package keystore

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// ErrLeaseLost reports that a token no longer holds its key: the lease
// expired, another claim took the key over, or the token was already used to
// complete or release it (and the call is not one of the repeats of its own
// work that succeed, see the package documentation). The operation that
// returned it changed nothing.
// Stores may wrap it; compare with errors.Is.
var ErrLeaseLost = errors.New("keystore: lease lost")

// ErrStoreFull reports that a store with a bounded capacity could not make
// room without dropping an unexpired entry: a key still in flight, or a
// record before the end of its retention (which would let a retry of that
// request run again). A bounded store refuses instead. The operation changed
// nothing; from Claim, nothing was claimed and it is safe to retry later.
var ErrStoreFull = errors.New("keystore: store full")

// MaxKeyLen is the longest key, in bytes, that every Store must accept. The
// middleware always passes a 64-character hexadecimal SHA-256 digest.
const MaxKeyLen = 255

// Fingerprint identifies a request's payload (the middleware uses SHA-256 of
// method, path and body). A store keeps the fingerprint given to the Claim that
// acquired a key and reports it back to every later Claim, so the caller can
// detect a different payload sent under the same key.
type Fingerprint [32]byte

// Token is a fencing token: the proof that a caller holds a key. A store never
// issues the zero Token, and never issues the same token twice for the same
// key, not even after the key has expired, been released or been taken over:
// memstore and pgstore draw tokens from a counter (pgstore's survives
// TRUNCATE … RESTART IDENTITY); a store that draws tokens at random
// (redisstore: 64 bits from crypto/rand) keeps the promise with overwhelming
// probability instead, two claims of one key sharing a token with
// probability 2⁻⁶⁴. Callers treat tokens as opaque values compared for
// equality.
type Token uint64

// Record is a recorded response: what the middleware replays to every retry.
type Record struct {
	// StatusCode is the HTTP status of the response: a final status, from
	// MinStatusCode to MaxStatusCode (200–599). Stores refuse any other
	// with ErrInvalidStatus (see Record.Validate).
	StatusCode int
	// Header holds the response headers chosen for replay. It may be nil.
	Header http.Header
	// Body is the response body, byte for byte. It may be nil.
	Body []byte
}

// Clone returns a deep copy of r: stores keep and return copies, so neither
// side can change the other's record after the call.
func (r Record) Clone() Record {
	c := Record{StatusCode: r.StatusCode}
	if r.Header != nil {
		c.Header = r.Header.Clone()
	}
	if r.Body != nil {
		c.Body = append(make([]byte, 0, len(r.Body)), r.Body...)
	}
	return c
}

// State says what a Claim found.
type State int

const (
	// Acquired: the key was absent, or its lease had expired, and the caller
	// now holds it with Claim.Token.
	Acquired State = iota + 1
	// InFlight: another caller holds the key; Claim.LeaseRemaining says for
	// how much longer, unless it is extended.
	InFlight
	// Completed: the key holds a Record, in Claim.Record.
	Completed
)

// String returns the state's name in lower case.
func (s State) String() string {
	switch s {
	case Acquired:
		return "acquired"
	case InFlight:
		return "in flight"
	case Completed:
		return "completed"
	}
	return "unknown"
}

// Claim is the result of [Store.Claim].
type Claim struct {
	// State says whether the key was acquired, is in flight or is completed.
	State State
	// Token holds the key when State is Acquired; it is zero otherwise.
	Token Token
	// TookOver is true when State is Acquired and the key was taken over from
	// an in-flight entry whose lease had expired.
	TookOver bool
	// Fingerprint is the fingerprint stored with the key: the caller's own when
	// State is Acquired, the original claimant's otherwise.
	Fingerprint Fingerprint
	// LeaseRemaining is the time left on the holder's lease when State is
	// InFlight, by the store's clock. It is always positive then.
	LeaseRemaining time.Duration
	// Record is the recorded response when State is Completed. The caller owns
	// it: the store keeps its own copy.
	Record Record
}

// Store holds idempotency keys. Implementations must be safe for concurrent
// use by multiple goroutines and, for networked stores, by multiple processes:
// each method is atomic with respect to every other call on the same key.
//
// Every method honours its context: a canceled or expired context makes it
// return an error that wraps ctx.Err(), without waiting for the store. When a
// method returns an error other than [ErrLeaseLost], the caller cannot know
// whether the store acted (a timeout may fall after the write); the middleware
// therefore treats such errors as "store unavailable" and never runs a handler
// without a successful Claim.
//
// Durations are rounded up to the store's resolution (at least a millisecond)
// and must be positive.
type Store interface {
	// Claim atomically acquires key for a new token held for lease, or reports
	// the entry that holds it: in flight with the remaining lease, or
	// completed with its Record. An in-flight entry whose lease has expired is
	// taken over as if the key were absent. Exactly one of any number of
	// concurrent Claims of an absent key acquires it.
	Claim(ctx context.Context, key string, fp Fingerprint, lease time.Duration) (Claim, error)

	// Extend renews the lease held by token so that it expires lease from now.
	// It fails with ErrLeaseLost if token no longer holds key, except that
	// Extend by the token that completed key succeeds and changes nothing
	// while the record is kept (see Repeats of a token's own work).
	Extend(ctx context.Context, key string, token Token, lease time.Duration) error

	// Complete stores rec as the key's record, kept for retention from now,
	// and ends token's hold. It fails with ErrLeaseLost, storing nothing, if
	// token no longer holds key, except that a repeat by the token that
	// completed key with an equal record succeeds and changes nothing. It
	// fails with an error wrapping
	// ErrInvalidStatus, storing nothing and leaving token's hold as it was,
	// if rec.StatusCode is outside 200–599.
	Complete(ctx context.Context, key string, token Token, rec Record, retention time.Duration) error

	// Release deletes the in-flight entry held by token, so the next Claim
	// acquires the key (without TookOver). It fails with ErrLeaseLost,
	// deleting nothing, if token no longer holds key, except that a repeat by
	// the token that released key succeeds and changes nothing until key is
	// claimed again.
	Release(ctx context.Context, key string, token Token) error
}

// Pinger is an optional capability of a Store: Ping reports whether the
// store can be reached now, without touching any key. Health checks find
// it by type assertion; a store without it is assumed reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// NonBlocking is an optional capability of a Store whose operations never
// wait: they run in process, under a lock held only for the operation, and
// return at once. Callers may then skip the timeouts they would put around
// a networked store's calls. Implementations must still honour a context
// that is already done.
//
// The capability belongs to one concrete store, never to what wraps it: a
// wrapper that embeds a NonBlocking store inherits its method but may add
// waits of its own, and a wrapper that embeds the Store interface hides the
// method. So NonBlocking returns the store it vouches for, and callers
// trust it only through [IsNonBlocking], which requires that store to be the
// very value asked about: an inherited method vouches for the embedded
// store, not for the wrapper. A wrapper that adds no waits keeps the
// capability by declaring it itself:
//
//	func (w *wrapper) NonBlocking() keystore.Store {
//		if keystore.IsNonBlocking(w.inner) {
//			return w
//		}
//		return nil
//	}
type NonBlocking interface {
	NonBlocking() Store
}

// IsNonBlocking reports whether s is a [NonBlocking] store: s has the method
// and it returns s itself.
func IsNonBlocking(s Store) bool {
	nb, ok := s.(NonBlocking)
	return ok && sameStore(nb.NonBlocking(), s)
}

// sameStore reports whether a and b are the same value; false where their
// dynamic type cannot be compared.
func sameStore(a, b Store) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
