package adminhttp

import (
	"context"
	"errors"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// Admin is an optional capability of a keystore.Store: what an operator
// needs to answer "did this request arrive, and what did we answer?" and
// to free a key left in flight by a process that died. Callers find it by
// type assertion (s.(adminhttp.Admin)); memstore, redisstore and pgstore
// have it, the conformance suite (keystoretest) checks it for every store
// that does, [Handler] serves it and [Client] calls it.
//
// Keys are the stored keys, as Claim receives them (the middleware's
// middleware.StoreKey of a scope and a client's key). Times are judged by
// the store's clock, as everywhere else. None of the methods takes part in
// the fencing protocol: Free and Forget end a hold or a record as if the
// lease or the retention had run out, so a token that held the key gets
// keystore.ErrLeaseLost from then on.
type Admin interface {
	// Inspect returns key's entry as it is now, without changing it.
	Inspect(ctx context.Context, key string) (Entry, error)

	// Free deletes key's entry when it is in flight and its lease has run
	// out or force is set, so that the next Claim acquires it at once. It
	// returns the entry as it found it; it fails, changing nothing, with
	// ErrLeaseRunning for an in-flight entry whose lease still runs (without
	// force) and with ErrNotInFlight for an absent, completed or released
	// entry: a completed record is never freed, only forgotten.
	Free(ctx context.Context, key string, force bool) (Entry, error)

	// Forget deletes key's completed record, so that the next request with
	// the key runs again. It returns the entry as it found it; it fails,
	// changing nothing, with ErrNotCompleted for any other entry.
	Forget(ctx context.Context, key string) (Entry, error)

	// Summarize counts the store's entries.
	Summarize(ctx context.Context) (Summary, error)
}

// Errors of the Admin methods; the operation changed nothing.
var (
	ErrLeaseRunning = errors.New("adminhttp: the key is in flight and its lease is still running")
	ErrNotInFlight  = errors.New("adminhttp: the key is not in flight")
	ErrNotCompleted = errors.New("adminhttp: the key holds no completed record")
)

// CanFree is Admin.Free's rule, for a store that applies it in Go: nil
// when e, the entry Free found, may be deleted, else the error Free
// returns.
func CanFree(e Entry, force bool) error {
	switch {
	case e.State != keystore.InFlight:
		return ErrNotInFlight
	case !e.LeaseRunOut && !force:
		return ErrLeaseRunning
	}
	return nil
}

// CanForget is Admin.Forget's rule, as CanFree is Free's.
func CanForget(e Entry) error {
	if e.State != keystore.Completed {
		return ErrNotCompleted
	}
	return nil
}

// Entry is one key's entry, as Admin.Inspect found it.
type Entry struct {
	State       keystore.State
	Fingerprint keystore.Fingerprint // of the request that claimed the key (InFlight, Completed)
	Token       keystore.Token       // the token that holds, completed or released the key, where the store keeps it

	// LeaseRemaining is the time left on the lease (InFlight): zero or negative
	// once the lease has run out, when the store can still tell how long ago.
	LeaseRemaining time.Duration
	// LeaseRunOut is true when the entry is held by a lease that has run
	// out: its holder is gone or stalled, and the next Claim takes it over.
	LeaseRunOut bool

	// Record is the record (Completed): the bytes Complete stored, as
	// keystore.Claim's Record. Do not change them.
	Record []byte
	// RetentionRemaining is how long the record is still kept (Completed).
	RetentionRemaining time.Duration
}

// Summary counts a store's entries, for Admin.Summarize.
type Summary struct {
	InFlight    int64 // entries in flight, those whose lease ran out included
	LeaseRunOut int64 // of those, the ones whose lease has run out
	Completed   int64 // completed records still kept
	// Bytes is what the store holds for those entries, as the store counts
	// it: memstore what it charges against its MaxBytes, redisstore and
	// pgstore the bytes of the stored values.
	Bytes int64
	// Oldest is the key of the entry nearest its end (a lease running out,
	// or a record's retention, whichever comes first; with one retention for
	// every record, the oldest record), "" when the store is empty, and
	// OldestRemaining the time until that end (negative for a lease that
	// has run out).
	Oldest          string
	OldestState     keystore.State
	OldestRemaining time.Duration
}

// Add counts e, the entry of key, holding bytes as its store counts them,
// into s: a store's Summarize calls it once for each entry it finds. An
// entry neither in flight nor completed is not counted.
func (s *Summary) Add(key string, e Entry, bytes int64) {
	var left time.Duration
	switch e.State {
	case keystore.InFlight:
		s.InFlight++
		if e.LeaseRunOut {
			s.LeaseRunOut++
		}
		left = e.LeaseRemaining
	case keystore.Completed:
		s.Completed++
		left = e.RetentionRemaining
	default:
		return
	}
	s.Bytes += bytes
	if s.InFlight+s.Completed == 1 || left < s.OldestRemaining {
		s.Oldest, s.OldestState, s.OldestRemaining = key, e.State, left
	}
}
