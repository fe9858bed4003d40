// Package keystore defines the contract between the geoidem middleware and the
// stores that hold idempotency keys.
//
// A [Store] does only atomic primitives on one key at a time; every policy
// decision (what to replay, when to release, how long to keep a record) lives
// in the middleware. Everything a call needs is one of its arguments: the
// context carries only cancellation, a deadline and the caller's tracing
// values, never an input the store must honour. The conformance suite in
// package keystoretest is the executable definition of a correct Store,
// one rule per input and capability: every implementation must pass
// keystoretest.Run.
//
// # Life of a key
//
// A key is in one [State] at a time: [Absent], [InFlight], [Completed] or
// [Released]. The same four names are used by adminhttp, the geoidem command
// and the middleware's logs.
//
//   - [Store.Claim] on an absent or released key acquires it for the token
//     its caller chose ([ClaimArgs.Token]): the store creates an in-flight
//     entry holding the caller's [Fingerprint] and starts a lease. Claim on
//     an in-flight key whose lease is still running reports it as in flight
//     with the remaining lease; Claim on an in-flight key whose lease has
//     expired takes it over, exactly as if it were absent. Claim on a
//     completed key reports the stored record.
//   - [Store.Extend] renews the lease of the token that holds the key.
//   - [Store.Complete] turns the in-flight entry into a completed one that
//     keeps its record, opaque bytes, for the given retention.
//   - [Store.Release] ends the in-flight entry: the key is released, and the
//     next Claim acquires it.
//
// A token holds its key from the Claim that acquired it until the first of:
// its lease expires, another Claim takes the key over, or the token is used
// to Complete or Release. After that, Extend, Complete and Release with the
// token fail with an error for which errors.Is(err, [ErrLeaseLost]) is true,
// and change nothing. This is the fencing rule: an owner whose lease ran out
// can never overwrite the work of the request that took the key over.
//
// # Claims whose outcome is unknown
//
// A Claim that fails (a timeout, a connection reset, a batch that outlived
// its caller) may have acquired the key all the same: the store acted and
// the reply was lost. Its caller knows the token it chose, so it releases
// the key with that token, whatever ended the call. Release therefore
// fences the token even when it does not hold the key: once Release(key,
// token) has returned, that token never holds key, not even by a Claim
// carrying it that reaches the store only later (a command that sat in a
// stalled server's queue, a statement still running in a batch). Such a
// late Claim fails with ErrLeaseLost and changes nothing. Stores keep the
// fence for a grace after the Release (at least a minute for those in this
// module).
//
// # Repeats of a token's own work
//
// Four repeats are not lost leases, because the token's work is done, not
// undone: each succeeds and changes nothing.
//
//   - Claim with the token that holds the key, its lease running: a client
//     library's resend of a Claim that was applied before the connection
//     broke reports the key acquired (not in flight, which would leave it
//     held by a caller who never learned so).
//   - Extend by the token that completed the key, while its record is kept:
//     a lease renewal that meets its own request's commit (a record stored by
//     pgstore's InTx or CompleteTx in the handler's transaction) succeeds,
//     and the record keeps its retention.
//   - Complete by the token that completed the key, with the same record
//     bytes: a client library's retry of a Complete that was applied before
//     the connection broke succeeds. With other bytes it fails with
//     ErrLeaseLost.
//   - Release by the token that released the key, until the key is claimed
//     again (stores keep the mark for a grace, at least a minute for those in
//     this module).
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
// A store may also offer optional capabilities, found by type assertion:
// [ClientBounded] (a bound on the new keys each client acquires), [Pinger],
// and package adminhttp's Admin (an operator's view of one entry, the
// freeing of a key left in flight by a process that died, the deletion of
// a completed record, counts), which the geoidem command's keys
// subcommand uses; memstore, redisstore and pgstore have all three. Each
// has its own rules in keystoretest; nothing in this module wraps a store,
// so no capability is ever hidden behind a wrapper.
//
// # Writing a store
//
// To a store a record is opaque bytes: [Store.Complete] receives them and
// [Store.Claim] returns them, byte for byte. (They are the middleware's
// encoding of a response, one stable encoding in which equal responses
// encode equally, so that a repeated Complete is recognised by comparing
// bytes; a store need not know it. See Complete for the one exception a
// store may make.) Run package keystoretest's Run against it.
package keystore

import (
	"context"
	"errors"
	"time"
)

// ErrLeaseLost reports that a token does not hold its key: the lease
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

// ErrInvalidClaim reports a Claim whose [ClaimArgs] break the contract: a
// zero Token, a lease that is not positive, a negative RecordBytes. It is
// a programming error of the caller; nothing was claimed.
var ErrInvalidClaim = errors.New("keystore: invalid claim arguments")

// ErrCorruptRecord reports record bytes that are not the middleware's
// record encoding exactly as it writes it: a store that reads the bytes
// it is given refuses them with it (see Store's Complete), and a decoder
// of this module fails with it. Compare with errors.Is.
var ErrCorruptRecord = errors.New("keystore: corrupt record encoding")

// ErrInvalidStatus reports a record whose status code is outside 200–599.
// A store that reads the bytes it is given refuses them with it (see
// Store's Complete), as do pgstore's InTx and CompleteTx, storing nothing
// and leaving the key held by its token; compare with errors.Is. It is a
// programming error of the caller (an unset status code, a 1xx), never a
// store failure.
var ErrInvalidStatus = errors.New("keystore: record status code outside 200–599")

// MaxKeyLen is the longest key, in bytes, that every Store must accept. The
// middleware always passes a 64-character hexadecimal SHA-256 digest.
const MaxKeyLen = 255

// Fingerprint identifies a request's payload (the middleware uses SHA-256 of
// method, path, query and body). A store keeps the fingerprint given to the
// Claim that acquired a key and reports it back to every later Claim, so the
// caller can detect a different payload sent under the same key.
type Fingerprint [32]byte

// Token is a fencing token: the proof that a caller holds a key. The caller
// of Claim chooses it, with [NewToken], so that it can release a key whose
// Claim failed (see the package documentation). Tokens are compared for
// equality only; the zero Token is never valid.
type Token uint64

// State is where a key is in its life (see the package documentation).
type State int

const (
	// Absent: no entry; a Claim acquires the key.
	Absent State = iota
	// InFlight: a token holds the key (or held it: see Entry.LeaseRunOut).
	InFlight
	// Completed: the key holds a record, replayed to every Claim.
	Completed
	// Released: the token that held the key released it; a Claim acquires
	// it. The store keeps the mark for a grace (see the package
	// documentation).
	Released
)

// String returns the state's name in lower case: "absent", "in flight",
// "completed" or "released".
func (s State) String() string {
	switch s {
	case Absent:
		return "absent"
	case InFlight:
		return "in flight"
	case Completed:
		return "completed"
	case Released:
		return "released"
	}
	return "unknown"
}

// ClaimArgs are the inputs of [Store.Claim], each one a rule of the
// conformance suite.
type ClaimArgs struct {
	// Fingerprint is the request's: kept with the key when the Claim
	// acquires it, and reported to every later Claim.
	Fingerprint Fingerprint
	// Lease is how long the key is held unless extended. It must be
	// positive; it is rounded up to the store's resolution (at least a
	// millisecond).
	Lease time.Duration
	// Token is the token the key is held by when the Claim acquires it:
	// chosen by the caller with NewToken, never zero. A token is used for
	// one Claim only.
	Token Token
	// Client names who the key is claimed for, "" for no one. A store with
	// a share per client (memstore) charges the key, and its record, to
	// that client, so that one client filling its share cannot deny the
	// others, and a [ClientBounded] store counts the client's new keys
	// against its bound; other stores ignore it.
	Client string
	// RecordBytes is the largest record, in bytes, that the caller may
	// complete the key with: a store that reserves room per claim
	// (memstore) reserves this much, so that the record always fits. Zero: the store's own default reservation.
	// It must not be negative.
	RecordBytes int
}

// Validate returns nil if a Claim with a may be sent, and otherwise an
// error wrapping [ErrInvalidClaim] that says which input is wrong. Every
// store's Claim calls it first.
func (a ClaimArgs) Validate() error {
	switch {
	case a.Token == 0:
		return invalidClaim("the token is zero; choose one with keystore.NewToken")
	case a.Lease <= 0:
		return invalidClaim("the lease must be positive")
	case a.RecordBytes < 0:
		return invalidClaim("RecordBytes must not be negative")
	}
	return nil
}

func invalidClaim(why string) error { return &claimError{why} }

type claimError struct{ why string }

func (e *claimError) Error() string { return ErrInvalidClaim.Error() + ": " + e.why }
func (e *claimError) Unwrap() error { return ErrInvalidClaim }

// Claim is the result of [Store.Claim].
type Claim struct {
	// Acquired is true when the caller now holds the key with its token
	// (State is then InFlight).
	Acquired bool
	// State is InFlight (acquired, or held by another token) or Completed.
	State State
	// TookOver is true when the Claim acquired the key by taking it over
	// from an in-flight entry whose lease had expired.
	TookOver bool
	// Fingerprint is the fingerprint stored with the key: the caller's own when
	// Acquired, the original claimant's otherwise.
	Fingerprint Fingerprint
	// LeaseRemaining is the time left on the holder's lease when the key is
	// held by another token, by the store's clock. It is always positive
	// then.
	LeaseRemaining time.Duration
	// Record is the record when State is Completed: the bytes Complete
	// stored, byte for byte. Neither the caller nor the store may change
	// them: a store may return the very bytes it keeps (memstore does),
	// and the caller may keep them as long as it likes.
	Record []byte
}

// Store holds idempotency keys. Implementations must be safe for concurrent
// use by multiple goroutines and, for networked stores, by multiple processes:
// each method is atomic with respect to every other call on the same key.
//
// Every method honours its context: a canceled or expired context makes it
// return an error that wraps ctx.Err(), without waiting for the store. When a
// method returns an error other than [ErrLeaseLost], the caller cannot know
// whether the store acted (a timeout may fall after the write); the middleware
// therefore treats such errors as "store unavailable", never runs a handler
// without a successful Claim, and releases, with its token, a key whose
// Claim failed.
//
// Durations are rounded up to the store's resolution (at least a millisecond)
// and must be positive.
type Store interface {
	// Claim atomically acquires key for a.Token, held for a.Lease, or reports
	// the entry that holds it: in flight with the remaining lease, or
	// completed with its record. An in-flight entry whose lease has expired,
	// and a released one, are taken over as if the key were absent. Exactly
	// one of any number of concurrent Claims of an absent key acquires it.
	// A Claim with the token that holds key reports it acquired and changes
	// nothing (see Repeats of a token's own work).
	// It fails with an error wrapping ErrInvalidClaim, claiming nothing, when
	// a.Validate does; with ErrLeaseLost, claiming nothing, when it would
	// acquire key for a token that was used in a Release of key (see the
	// package documentation); and with ErrStoreFull when a bounded store has
	// no room.
	Claim(ctx context.Context, key string, a ClaimArgs) (Claim, error)

	// Extend renews the lease held by token so that it expires lease from
	// now, and returns the lease that remained before, by the store's clock
	// (the middleware compares it with its own reckoning to detect a step of
	// the store's clock). It fails with ErrLeaseLost if token does not hold
	// key, except that Extend by the token that completed key succeeds,
	// returns zero and changes nothing while the record is kept (see Repeats
	// of a token's own work).
	Extend(ctx context.Context, key string, token Token, lease time.Duration) (remaining time.Duration, err error)

	// Complete stores rec as the key's record, kept for retention from
	// now, and ends token's hold; every later Claim returns rec byte for
	// byte. It fails with ErrLeaseLost, storing nothing, if token does not
	// hold key, except that a repeat by the token that completed key with
	// the same bytes succeeds and changes nothing.
	//
	// A store keeps any bytes, with one exception: a store may read rec as
	// the middleware's record encoding (pgstore keeps its status, header
	// and body in columns of their own), and such a store refuses bytes it
	// could not return byte for byte: with an error wrapping
	// ErrCorruptRecord bytes that are not that encoding exactly as the
	// middleware writes it, and with one wrapping ErrInvalidStatus an
	// encoding whose status is outside 200–599. A refused Complete stores
	// nothing and leaves token's hold as it was. The middleware never sends
	// such bytes. A store that reserved room for the key's record
	// (ClaimArgs.RecordBytes) never refuses a record that fits the
	// reservation for want of room. It keeps no reference to rec once it
	// returns.
	Complete(ctx context.Context, key string, token Token, rec []byte, retention time.Duration) error

	// Release ends the in-flight entry held by token, so that the next Claim
	// acquires the key (without TookOver). It fails with ErrLeaseLost,
	// releasing nothing, if token does not hold key, except that a repeat by
	// the token that released key succeeds and changes nothing until key is
	// claimed again. Whether it succeeds or not, token never holds key
	// afterwards: a Claim with token that reaches the store later fails
	// with ErrLeaseLost.
	Release(ctx context.Context, key string, token Token) error
}

// Pinger is an optional capability of a Store: Ping reports whether the
// store can be reached now, without touching any key, and honours its
// context. Health checks find it by type assertion; a store without it is
// assumed reachable, as memstore, in the process, always is. redisstore
// and pgstore have it (keystoretest's Pinger rule).
type Pinger interface {
	Ping(ctx context.Context) error
}
