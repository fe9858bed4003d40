package observe

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// The operations a [StoreCall] reports.
const (
	OpClaim    = "claim"
	OpExtend   = "extend"
	OpComplete = "complete"
	OpRelease  = "release"
)

// StoreOps lists the operations a [StoreCall] reports, for registering
// their series up front.
func StoreOps() []string { return []string{OpClaim, OpExtend, OpComplete, OpRelease} }

// StoreCall describes one call of a key store operation, for the callback
// of [Store], and for pgstore.Config.Observer, which reports the
// completions of pgstore's InTx and CompleteTx (Op OpComplete), made in the
// handler's transaction and so never through the Store wrapper.
type StoreCall struct {
	// Op is the operation: OpClaim, OpExtend, OpComplete or OpRelease.
	Op string
	// Latency is the time the wrapped store took to return.
	Latency time.Duration
	// Err is the error the store returned, if any (keystore.ErrLeaseLost
	// included).
	Err error
	// Context is the context the call was made with. It may be done by the
	// time the callback runs; do not keep it.
	Context context.Context
}

// Store returns s with every Claim, Extend, Complete and Release reported to
// fn, after the call returns and before its result is handed back. fn is
// called synchronously and must be fast and safe for concurrent use. A nil
// fn returns s itself.
//
// The result has the optional keystore capabilities of s and no others: it is a
// [keystore.Pinger] if and only if s is (Ping is passed through, not
// reported), and [keystore.IsNonBlocking] holds for it if and only if it
// holds for s, since reporting adds no wait of its own.
func Store(s keystore.Store, fn func(StoreCall)) keystore.Store {
	if fn == nil {
		return s
	}
	t := &timedStore{inner: s, report: fn}
	if p, ok := s.(keystore.Pinger); ok {
		return &pingingStore{timedStore: t, pinger: p}
	}
	return t
}

// timedStore reports each operation of inner.
type timedStore struct {
	inner  keystore.Store
	report func(StoreCall)
}

func (s *timedStore) done(ctx context.Context, op string, start time.Time, err error) {
	s.report(StoreCall{Op: op, Latency: time.Since(start), Err: err, Context: ctx})
}

func (s *timedStore) Claim(ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (keystore.Claim, error) {
	start := time.Now()
	c, err := s.inner.Claim(ctx, key, fp, lease)
	s.done(ctx, OpClaim, start, err)
	return c, err
}

func (s *timedStore) Extend(ctx context.Context, key string, tok keystore.Token, lease time.Duration) error {
	start := time.Now()
	err := s.inner.Extend(ctx, key, tok, lease)
	s.done(ctx, OpExtend, start, err)
	return err
}

func (s *timedStore) Complete(ctx context.Context, key string, tok keystore.Token, rec keystore.Record, retention time.Duration) error {
	start := time.Now()
	err := s.inner.Complete(ctx, key, tok, rec, retention)
	s.done(ctx, OpComplete, start, err)
	return err
}

func (s *timedStore) Release(ctx context.Context, key string, tok keystore.Token) error {
	start := time.Now()
	err := s.inner.Release(ctx, key, tok)
	s.done(ctx, OpRelease, start, err)
	return err
}

// NonBlocking keeps the wrapped store's keystore.NonBlocking capability:
// timing adds no wait. A store that waits stays one behind the wrapper.
func (s *timedStore) NonBlocking() keystore.Store {
	if keystore.IsNonBlocking(s.inner) {
		return s
	}
	return nil
}

// pingingStore is a timedStore whose inner store is a keystore.Pinger.
type pingingStore struct {
	*timedStore
	pinger keystore.Pinger
}

// Ping probes the wrapped store.
func (s *pingingStore) Ping(ctx context.Context) error { return s.pinger.Ping(ctx) }

// NonBlocking vouches for s itself, not for the embedded timedStore.
func (s *pingingStore) NonBlocking() keystore.Store {
	if keystore.IsNonBlocking(s.inner) {
		return s
	}
	return nil
}
