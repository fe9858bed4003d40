// Package memstore is the embedded, in-process [keystore.Store]: the default
// for a single receiving process, for tests and for development.
//
// A [Store] works from its zero value, is safe for concurrent use, and copies
// every record it stores and returns, so callers can never race with it. It
// runs no background goroutine: expired entries are removed as part of the
// operations that follow their expiry, in time logarithmic in the number of
// entries.
//
// # Bounded memory
//
// A Store holds at most [Config.MaxEntries] keys and about [Config.MaxBytes]
// bytes of keys and records, and it never drops an entry before its time to
// make room: not a key in flight, because that would let a second request
// run while the first one still does, and not a completed record before the
// end of its retention, because a retry of that request would then run the
// handler again. When a new claim finds no room, the store drops expired
// entries; if that is not enough, Claim fails with a [*keystore.FullError]
// (an [keystore.ErrStoreFull]) saying when the earliest entry ends (the
// middleware answers 503 store-full with that Retry-After, nothing runs,
// and the sender retries later). A full store therefore refuses new keys
// until records reach the end of their retention: size the limits for the
// traffic of a whole retention period. A claim whose context names a
// client (keystore.ContextWithClient; the middleware's Config.Client) is
// also kept to that client's share, [Config.MaxClientEntries] and
// [Config.MaxClientBytes], a quarter of the store by default: one
// client's flood fills its share, and the others still claim.
// [Store.Stats] counts the refusals.
//
// Each claim is charged, from Claim until Complete or Release, for
// [Config.ReserveBytes] as well as its key: room for the record it will
// complete with. Complete then charges the record's real size instead, so a
// record no larger than the reservation always fits, and the answer of a
// handler that ran is never lost for want of room. A larger record takes
// the difference from the free budget (dropping expired entries if it must)
// and is refused with ErrStoreFull when there is none. A record's size is
// its encoding, [keystore.RecordLen], which the middleware's MaxRecordBytes
// bounds (headers included): set ReserveBytes to at least that (the default
// covers the middleware's defaults); it also bounds the claims in
// flight at once to MaxBytes / ReserveBytes.
//
// # Scope
//
// Keys live in one process: two replicas behind a load balancer do not see
// each other's keys. Use the Redis or PostgreSQL store for that.
package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// Stats is a snapshot of a Store's contents.
type Stats struct {
	Entries int   // keys held, in flight or completed
	Bytes   int64 // bytes charged against Config.MaxBytes, reservations included
	// Refused counts the calls that failed with keystore.ErrStoreFull: claims
	// of new keys, and completions with a record larger than its reservation,
	// that found no room. A store never drops an unexpired entry instead.
	Refused uint64
}

// Store is an in-memory keystore.Store. The zero value is an empty store with
// the default limits. A Store must not be copied after first use.
//
// Store never returns an error other than keystore.ErrLeaseLost,
// keystore.ErrStoreFull, an error for a non-positive duration, one wrapping
// keystore.ErrInvalidStatus for a record whose status is outside 200–599, or
// the context's error when the context is already done.
type Store struct {
	mu        sync.Mutex
	cfg       Config
	base      time.Time       // deadlines are nanoseconds since base, on the monotonic clock
	index     map[keyID]int32 // key -> slot in entries and recs
	entries   []*entryPage    // by slot (see entry): pages without pointers, which the collector never scans
	recs      []*recPage      // encoded records, by slot (see rec): the only pointers per entry
	slots     int32           // slots in use or free: the pages hold this many
	free      []int32         // unused slots
	leases    slotHeap        // in-flight slots, by lease expiry
	records   slotHeap        // completed slots, by end of retention
	bytes     int64
	lastToken keystore.Token
	refused   uint64
	released  int              // entries kept after Release (see Release), not counted as held
	clients   map[string]int32 // client -> index in clientUse
	clientUse []clientUse      // by index; index 0 is unused (no client)
	freeUse   []int32          // unused indexes of clientUse
}

// New returns an empty Store with the given limits.
func New(cfg Config) *Store {
	return &Store{cfg: cfg}
}

var (
	_ keystore.Store            = (*Store)(nil)
	_ keystore.NonBlocking      = (*Store)(nil)
	_ keystore.EncodedCompleter = (*Store)(nil)
)

// NonBlocking marks Store as a keystore.NonBlocking store: no operation
// waits, so the middleware needs no timeout around them. It vouches for s
// only, not for a type that embeds it (see keystore.IsNonBlocking).
func (s *Store) NonBlocking() keystore.Store { return s }

var errDuration = errors.New("memstore: duration must be positive")

func (s *Store) init() {
	if s.index == nil {
		s.index = make(map[keyID]int32)
		s.base = time.Now()
		s.leases.s, s.records.s = s, s
	}
}

// now returns the current time as a deadline value.
func (s *Store) now() int64 { return int64(time.Since(s.base)) }

// Claim implements keystore.Store. What needs no state (the key's ID, the
// client and token the context names, a replayed record's decoding) is done
// outside the lock: every request claims, so the lock is held only for the
// lookup and the bookkeeping. A stored encoding is never written in place,
// only replaced, so decoding it after the unlock reads what was found.
func (s *Store) Claim(ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (keystore.Claim, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Claim{}, err
	}
	if lease <= 0 {
		return keystore.Claim{}, errDuration
	}
	id := idOf(key)
	client, named := keystore.ClientFromContext(ctx)
	tok, chosen := keystore.ClaimTokenFromContext(ctx)
	s.mu.Lock()
	c, enc, err := s.claim(id, int64(len(key)), fp, lease, client, named, tok, chosen)
	s.mu.Unlock()
	if err == nil && c.State == keystore.Completed {
		c.Record = decodeRecord(enc)
	}
	return c, err
}

// claim is Claim under s.mu. For a completed key it returns the record's
// encoding, for the caller to decode after the unlock.
func (s *Store) claim(id keyID, keyLen int64, fp keystore.Fingerprint, lease time.Duration, client string, named bool, tok keystore.Token, chosen bool) (keystore.Claim, []byte, error) {
	s.init()
	now := s.now()
	tookOver := false
	if slot, ok := s.index[id]; ok {
		e := s.entry(slot)
		if e.deadline > now && e.state != released {
			if e.state == inFlight {
				return keystore.Claim{State: keystore.InFlight, Fingerprint: e.fp, LeaseRemaining: time.Duration(e.deadline - now)}, nil, nil
			}
			return keystore.Claim{State: keystore.Completed, Fingerprint: e.fp}, *s.rec(slot), nil
		}
		tookOver = e.state == inFlight
		s.remove(slot)
	}
	s.dropExpired(now)
	size := entryOverhead + keyLen + s.reserve()
	if named {
		if ra, ok := s.clientRoom(client, size, now); !ok {
			s.refused++
			return keystore.Claim{}, nil, &keystore.FullError{RetryAfter: ra, Client: true}
		}
	}
	if !s.makeRoom(1, size, now) {
		s.refused++
		return keystore.Claim{}, nil, &keystore.FullError{RetryAfter: s.nextFree(now)}
	}
	if !chosen {
		s.lastToken++
		tok = s.lastToken
	}
	slot := s.alloc()
	e := s.entry(slot)
	*e = entry{id: id, fp: fp, token: tok, deadline: now + int64(lease), size: size}
	if named {
		e.client = s.clientIndex(client)
		s.chargeClient(e.client, 1, size)
	}
	s.index[id] = slot
	s.bytes += size
	s.leases.push(slot)
	return keystore.Claim{State: keystore.Acquired, Token: tok, TookOver: tookOver, Fingerprint: fp}, nil, nil
}

// Extend implements keystore.Store. Extend by the token that completed the
// key succeeds and changes nothing while the record is kept.
func (s *Store) Extend(ctx context.Context, key string, token keystore.Token, lease time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if lease <= 0 {
		return errDuration
	}
	remaining := time.Duration(-1)
	defer func() { // after the unlock: the report is the caller's code
		if remaining >= 0 {
			keystore.ReportLease(ctx, remaining)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.held(key, token, now)
	if slot < 0 {
		if s.ended(key, token, completed, now) >= 0 {
			return nil
		}
		return keystore.ErrLeaseLost
	}
	remaining = time.Duration(s.entry(slot).deadline - now)
	s.entry(slot).deadline = now + int64(lease)
	s.leases.fix(s.entry(slot).pos)
	return nil
}

// Complete implements keystore.Store. Complete repeated by the token that
// completed the key, with an equal record, succeeds and changes nothing.
func (s *Store) Complete(ctx context.Context, key string, token keystore.Token, rec keystore.Record, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if retention <= 0 {
		return errDuration
	}
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("memstore: complete: %w", err)
	}
	return s.complete(key, token, retention, keystore.RecordLen(rec), func(dst []byte) []byte { return keystore.AppendRecord(dst, rec) })
}

// CompletesEncoded marks Store as a keystore.EncodedCompleter. It vouches
// for s only, not for a type that embeds it (see keystore.CompletesEncoded).
func (s *Store) CompletesEncoded() keystore.Store { return s }

// CompleteEncoded implements keystore.EncodedCompleter: Complete with the
// record that enc encodes, copied.
func (s *Store) CompleteEncoded(ctx context.Context, key string, token keystore.Token, enc []byte, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if retention <= 0 {
		return errDuration
	}
	if _, err := keystore.CheckRecord(enc); err != nil {
		return fmt.Errorf("memstore: complete: %w", err)
	}
	return s.complete(key, token, retention, len(enc), func(dst []byte) []byte { return append(dst, enc...) })
}

// complete stores the record that encode appends, n bytes, for the key
// that token holds.
func (s *Store) complete(key string, token keystore.Token, retention time.Duration, n int, encode func([]byte) []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.held(key, token, now)
	if slot < 0 {
		// Equal records have equal encodings.
		if done := s.ended(key, token, completed, now); done >= 0 && len(*s.rec(done)) == n && bytes.Equal(*s.rec(done), encode(make([]byte, 0, n))) {
			return nil
		}
		return keystore.ErrLeaseLost
	}
	data := encode(make([]byte, 0, n))
	// The record's real size replaces the claim's reservation.
	grow := entryOverhead + int64(len(key)) + int64(len(data)) - s.entry(slot).size
	// Take the entry out of the lease heap first so that making room can
	// never consider it; put it back unchanged if there is no room.
	s.leases.remove(s.entry(slot).pos)
	if grow > 0 && !s.makeRoom(0, grow, now) {
		s.leases.push(slot)
		s.refused++
		return &keystore.FullError{RetryAfter: s.nextFree(now)}
	}
	e := s.entry(slot)
	e.state = completed
	*s.rec(slot) = data
	e.size += grow
	s.bytes += grow
	s.chargeClient(e.client, 0, grow)
	e.deadline = now + int64(retention)
	s.records.push(slot)
	return nil
}

// Release implements keystore.Store. The released entry is kept as a lease
// that has ended, without TookOver for the claim that replaces it, so that
// Release repeated by the same token succeeds and changes nothing until the
// key is claimed again (or, at most, for a minute).
func (s *Store) Release(ctx context.Context, key string, token keystore.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.held(key, token, now)
	if slot < 0 {
		if s.ended(key, token, released, now) >= 0 {
			return nil
		}
		return keystore.ErrLeaseLost
	}
	e := s.entry(slot)
	e.state = released
	e.deadline = now
	s.leases.fix(e.pos)
	// A released entry is charged only its key, whatever its claim was charged.
	keep := entryOverhead + int64(len(key))
	s.bytes -= e.size - keep
	s.chargeClient(e.client, 0, keep-e.size)
	e.size = keep
	s.released++
	return nil
}

// Stats returns a snapshot of the store's contents.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Entries: len(s.index) - s.released, Bytes: s.bytes, Refused: s.refused}
}

// Close drops every entry. It exists so that a Store can stand wherever a
// closable store is expected; a Store starts no goroutine, and it remains
// usable, and empty, after Close. It always returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index, s.entries, s.recs, s.slots, s.free, s.leases.slots, s.records.slots, s.bytes, s.released = nil, nil, nil, 0, nil, nil, nil, 0, 0
	s.clients, s.clientUse, s.freeUse = nil, nil, nil
	return nil
}
