package memstore

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
)

var _ adminhttp.Admin = (*Store)(nil)

// entryOf describes the entry in slot; s.mu is held.
func (s *Store) entryOf(slot int32, now int64) adminhttp.Entry {
	e := s.entry(slot)
	left := time.Duration(e.deadline - now)
	switch e.state {
	case inFlight:
		return adminhttp.Entry{State: keystore.InFlight, Fingerprint: e.fp, Token: e.token, LeaseRemaining: left, LeaseRunOut: left <= 0}
	case completed:
		if left <= 0 {
			return adminhttp.Entry{} // the retention has ended: as good as absent
		}
		return adminhttp.Entry{State: keystore.Completed, Fingerprint: e.fp, Token: e.token, Record: *s.rec(slot), RetentionRemaining: left}
	}
	return adminhttp.Entry{State: keystore.Released, Fingerprint: e.fp, Token: e.token}
}

// Inspect implements adminhttp.Admin.
func (s *Store) Inspect(ctx context.Context, key string) (adminhttp.Entry, error) {
	if err := ctx.Err(); err != nil {
		return adminhttp.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.index[idOf(key)]
	if !ok {
		return adminhttp.Entry{}, nil
	}
	return s.entryOf(slot, s.now()), nil
}

// Free implements adminhttp.Admin.
func (s *Store) Free(ctx context.Context, key string, force bool) (adminhttp.Entry, error) {
	return s.change(ctx, key, func(e adminhttp.Entry) error { return adminhttp.CanFree(e, force) })
}

// Forget implements adminhttp.Admin.
func (s *Store) Forget(ctx context.Context, key string) (adminhttp.Entry, error) {
	return s.change(ctx, key, adminhttp.CanForget)
}

// change removes key's entry when rule, given the entry as it is, says
// nil; else it returns the entry with rule's error, changing nothing.
func (s *Store) change(ctx context.Context, key string, rule func(adminhttp.Entry) error) (adminhttp.Entry, error) {
	if err := ctx.Err(); err != nil {
		return adminhttp.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.index[idOf(key)]
	if !ok {
		return adminhttp.Entry{}, rule(adminhttp.Entry{})
	}
	e := s.entryOf(slot, s.now())
	if err := rule(e); err != nil {
		return e, err
	}
	s.remove(slot)
	return e, nil
}

// Summarize implements adminhttp.Admin. Oldest is the key for a key the
// middleware stores; memstore keeps any other key only as its SHA-256, and
// Oldest is then that hash in hexadecimal.
func (s *Store) Summarize(ctx context.Context) (adminhttp.Summary, error) {
	if err := ctx.Err(); err != nil {
		return adminhttp.Summary{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var sum adminhttp.Summary
	for id, slot := range s.index {
		sum.Add(id.String(), s.entryOf(slot, now), s.entry(slot).size)
	}
	return sum, nil
}

// String returns id in hexadecimal: the key itself for a key the
// middleware stores (64 lowercase hexadecimal characters).
func (id keyID) String() string { return hex.EncodeToString(id[:]) }
