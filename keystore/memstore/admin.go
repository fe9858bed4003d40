package memstore

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

var _ keystore.Admin = (*Store)(nil)

// entryOf describes the entry in slot; s.mu is held.
func (s *Store) entryOf(slot int32, now int64) keystore.Entry {
	e := s.entry(slot)
	left := time.Duration(e.deadline - now)
	switch e.state {
	case inFlight:
		return keystore.Entry{State: keystore.InFlight, Fingerprint: e.fp, Token: e.token, LeaseRemaining: left, LeaseRunOut: left <= 0}
	case completed:
		if left <= 0 {
			return keystore.Entry{} // the retention has ended: as good as absent
		}
		return keystore.Entry{State: keystore.Completed, Fingerprint: e.fp, Token: e.token, Record: decodeRecord(*s.rec(slot)), RetentionRemaining: left}
	}
	return keystore.Entry{State: keystore.Released, Fingerprint: e.fp, Token: e.token}
}

// Inspect implements keystore.Admin.
func (s *Store) Inspect(ctx context.Context, key string) (keystore.Entry, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.index[idOf(key)]
	if !ok {
		return keystore.Entry{}, nil
	}
	return s.entryOf(slot, s.now()), nil
}

// Free implements keystore.Admin.
func (s *Store) Free(ctx context.Context, key string, force bool) (keystore.Entry, error) {
	return s.change(ctx, key, func(e keystore.Entry) error { return keystore.CanFree(e, force) })
}

// Forget implements keystore.Admin.
func (s *Store) Forget(ctx context.Context, key string) (keystore.Entry, error) {
	return s.change(ctx, key, keystore.CanForget)
}

// change removes key's entry when rule, given the entry as it is, says
// nil; else it returns the entry with rule's error, changing nothing.
func (s *Store) change(ctx context.Context, key string, rule func(keystore.Entry) error) (keystore.Entry, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.index[idOf(key)]
	if !ok {
		return keystore.Entry{}, rule(keystore.Entry{})
	}
	e := s.entryOf(slot, s.now())
	if err := rule(e); err != nil {
		return e, err
	}
	s.remove(slot)
	return e, nil
}

// Summarize implements keystore.Admin. Oldest is the key for a key the
// middleware stores; memstore keeps any other key only as its SHA-256, and
// Oldest is then that hash in hexadecimal.
func (s *Store) Summarize(ctx context.Context) (keystore.Summary, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Summary{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var sum keystore.Summary
	for id, slot := range s.index {
		sum.Add(id.String(), s.entryOf(slot, now), s.entry(slot).size)
	}
	return sum, nil
}

// String returns id in hexadecimal: the key itself for a key the
// middleware stores (64 lowercase hexadecimal characters).
func (id keyID) String() string { return hex.EncodeToString(id[:]) }
