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
// bytes of keys and records. It never drops a key in flight to make room,
// because that would let a second request run while the first one still
// does. When a new claim finds no room, the store drops what has expired
// and what was released; if that is not enough, it evicts completed
// records older than a floor ([Config.EvictAfter], an hour by default),
// oldest first, as many as the claim needs. A retry of an evicted
// record's request runs its handler again, so the floor is the time
// within which a retry is always replayed, whatever fills the store;
// records younger than it are kept for their whole retention. Evictions
// are counted ([Stats].Evicted) and logged ([Config.Logger]). If there is
// still no room, Claim fails with a [*keystore.FullError] (an
// [keystore.ErrStoreFull]) saying when room can next free by itself: the
// earliest end of a lease or a retention, or the earliest time a record
// passes the floor (the middleware answers 503 store-full with that
// Retry-After; nothing runs, and the sender retries later). A full store
// therefore refuses new keys for at most the floor, or a lease, whatever
// fills it; size the limits for the traffic of a retention period so that
// nothing is evicted in normal operation. With a negative EvictAfter
// nothing is evicted and a full store refuses new keys until records
// reach the end of their retention. [Store.Stats] counts the refusals.
//
// # Clients under contention
//
// A claim for a client (keystore.ClaimArgs.Client; the middleware's
// Config.Client) is bounded by nothing but the store's limits while the
// store has room to spare: a lone sender may fill all of it but the
// headroom, a quarter of MaxEntries and of MaxBytes, and a legitimate
// sender on an idle store is never refused. The store is contended once a
// claim would leave less free than the headroom; released entries, which
// the store drops whenever it needs their room, count as free. Then each
// client acquires at most [Config.ClientKeys] new keys in a window of
// [Config.ClientWindow] that starts with its first (64 a minute by
// default), the bound of every store that has one
// ([keystore.ClientBounded]): past it, a Claim of a new key for the
// client is refused with a [*keystore.FullError] whose Client is set and
// whose RetryAfter is the rest of its window, while the others still
// claim. Only new keys under contention count: a replay, a key in
// flight, an expired lease taken over, and a key released (the retry of a
// request answered 5xx) claimed again while the store keeps its release
// (a minute, or until it needs the room) are not new keys, and are never
// refused for the bound.
//
// What a newcomer is guaranteed: its first ClientKeys new keys under
// contention go in at once, and ClientKeys a window after that, as long
// as the headroom lasts. N clients take at most N×ClientKeys of the
// headroom a window, so a headroom of H keys lasts at least
// H / (N×ClientKeys) windows, less one: with the defaults (H = 25,000
// keys, 64 a minute) about 48 minutes against 8 source addresses that
// flood it, about 3 minutes against 100. Beyond that, the store is full,
// and new keys get the room of records past the eviction floor as it
// frees (see Bounded memory). Key clients by an identity that costs more
// than a source address (an authenticated sender; an IPv6 /64 rather
// than an address), and size the store for a retention's traffic.
//
// Each claim is charged, from Claim until Complete or Release, for room for
// the record it will complete with as well as its key: the claim's
// keystore.ClaimArgs.RecordBytes, which the middleware sets to its
// MaxRecordBytes, or [Config.ReserveBytes] for a claim that does not say.
// Complete then charges the record's real size instead, so a record no
// larger than the reservation always fits, and the answer of a handler that
// ran is never lost for want of room. A larger record takes the difference
// from the free budget (making room as a claim does, if it must) and is refused
// with ErrStoreFull when there is none. A record's size is its length in
// bytes. The reservation also bounds the claims in flight at
// once to MaxBytes / reservation.
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
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Stats is a snapshot of a Store's contents.
type Stats struct {
	Entries int   // keys held, in flight or completed
	Bytes   int64 // bytes charged against Config.MaxBytes, reservations included
	// Refused counts the calls that failed with keystore.ErrStoreFull: claims
	// of new keys, and completions with a record larger than its reservation,
	// that found no room.
	Refused uint64
	// Evicted counts the completed records dropped before the end of their
	// retention to make room in a full store: records older than
	// Config.EvictAfter, oldest first. A retry of one of their requests runs
	// its handler again.
	Evicted uint64
}

// Store is an in-memory keystore.Store. The zero value is an empty store with
// the default limits. A Store must not be copied after first use.
//
// Store never returns an error other than keystore.ErrLeaseLost,
// keystore.ErrStoreFull, an error for a non-positive duration, one wrapping
// keystore.ErrInvalidStatus for a record whose status is outside 200–599, or
// the context's error when the context is already done.
type Store struct {
	mu            sync.RWMutex // read-locked by a Claim that finds its key live (see Claim), else locked
	cfg           Config
	base          time.Time       // deadlines are nanoseconds since base, on the monotonic clock
	index         map[keyID]int32 // key -> slot in entries and recs
	entries       []*entryPage    // by slot (see entry): pages without pointers, which the collector never scans
	recs          []*recPage      // encoded records, by slot (see rec): the only pointers per entry
	slots         int32           // slots in use or free: the pages hold this many
	free          []int32         // unused slots
	leases        slotHeap        // in-flight slots, by lease expiry
	records       slotHeap        // completed slots, by end of retention
	ages          slotHeap        // completed slots, by completion: the order of eviction
	releases      slotHeap        // released slots, by release
	bytes         int64
	refused       uint64
	evicted       uint64
	released      int              // entries kept after Release (see Release), not counted as held
	releasedBytes int64            // their bytes
	clients       map[string]tally // the counts of new keys under contention (Config.ClientKeys), by client
	windows       []clientWindow   // the windows of clients, in the order they end
	evictLog      evictLog         // evictions not yet logged
	evictDue      atomic.Bool      // evictLog.due, read without the lock
	spare         *spare           // for the next page (see prepare)
	spared        atomic.Bool      // the store has a spare; else a Claim prepares one
	roomy         atomic.Bool      // the arrays have room for the next page; else the spare brings larger ones
	wantCap       atomic.Int32     // their capacity, in slots (zero: the first page's)
}

// New returns an empty Store with the given limits.
func New(cfg Config) *Store {
	return &Store{cfg: cfg}
}

var (
	_ keystore.Store         = (*Store)(nil)
	_ keystore.ClientBounded = (*Store)(nil)
)

// ClientBound implements keystore.ClientBounded: Config.ClientKeys per
// Config.ClientWindow (their defaults where zero), or none when ClientKeys
// is negative. The store holds its clients to it only under contention
// (see Clients under contention).
func (s *Store) ClientBound() keystore.ClientBound {
	keys, window := s.clientBound()
	if keys == 0 {
		return keystore.ClientBound{}
	}
	return keystore.ClientBound{Keys: keys, Window: window}
}

var errDuration = errors.New("memstore: duration must be positive")

func (s *Store) init() {
	if s.index == nil {
		s.index = make(map[keyID]int32)
		s.base = time.Now()
		s.leases.s, s.records.s, s.ages.s, s.releases.s = s, s, s, s
		s.ages.age = true
	}
}

// now returns the current time as a deadline value.
func (s *Store) now() int64 { return int64(time.Since(s.base)) }

// Claim implements keystore.Store. What needs no state (the key's ID) is
// done outside the lock: every request claims, so the lock is held only
// for the lookup and the bookkeeping. A key that is live (completed within
// its retention, or in flight within its lease) changes nothing, so its
// Claim takes the lock shared: replays of one key, and the duplicates a
// storm sends while the first runs, do not queue behind one another. A
// completed key's Record is the very slice the store keeps: a stored
// record is never written in place, only replaced or dropped, so the
// caller may keep it (and must not change it).
func (s *Store) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Claim{}, err
	}
	if err := a.Validate(); err != nil {
		return keystore.Claim{}, err
	}
	id := idOf(key)
	s.mu.RLock()
	c, enc, live := s.claimLive(id, a.Token)
	s.mu.RUnlock()
	var err error
	if !live {
		sp := s.prepare() // what the store's growth needs, allocated before the lock
		s.mu.Lock()
		s.install(sp)
		c, enc, err = s.claim(id, int64(len(key)), a)
		s.mu.Unlock()
	}
	s.logEvictions()
	if err == nil && c.State == keystore.Completed {
		c.Record = enc
	}
	return c, err
}

// claim is Claim under s.mu. For a completed key it returns the record's
// encoding, for the caller to decode after the unlock.
func (s *Store) claim(id keyID, keyLen int64, a keystore.ClaimArgs) (keystore.Claim, []byte, error) {
	s.init()
	now := s.now()
	tookOver, newKey := false, true
	if slot, ok := s.index[id]; ok {
		if c, enc, live := s.live(slot, a.Token, now); live { // it became live since Claim looked
			return c, enc, nil
		}
		e := s.entry(slot)
		if e.spent(a.Token) {
			return keystore.Claim{}, nil, keystore.ErrLeaseLost // fenced by a Release
		}
		tookOver = e.state == inFlight
		newKey = e.state == completed // a record past its retention; a lease or a release is the key's own
		s.remove(slot)
	}
	s.dropExpired(now)
	reserve := s.reserve()
	if a.RecordBytes > 0 && s.cfg.ReserveBytes >= 0 {
		reserve = int64(a.RecordBytes)
	}
	size := entryOverhead + keyLen + reserve
	count := false
	if a.Client != "" {
		var refusal error
		if count, refusal = s.admitClient(a.Client, size, newKey, now); refusal != nil {
			s.refused++
			return keystore.Claim{}, nil, refusal
		}
	}
	if !s.makeRoom(1, size, now, true) {
		s.refused++
		return keystore.Claim{}, nil, &keystore.FullError{RetryAfter: s.nextFree(now)}
	}
	slot := s.alloc()
	e := s.entry(slot)
	*e = entry{id: id, fp: a.Fingerprint, token: a.Token, deadline: now + int64(a.Lease), size: size}
	if count {
		s.countClient(a.Client, now)
	}
	s.index[id] = slot
	s.bytes += size
	s.leases.push(slot)
	return keystore.Claim{Acquired: true, State: keystore.InFlight, TookOver: tookOver, Fingerprint: a.Fingerprint}, nil, nil
}

// claimLive is the Claim of a live key, which changes nothing: the key is
// completed within its retention or in flight within its lease (and not
// released). live is false for any other key, which claim handles under
// the exclusive lock. s.mu is held shared.
func (s *Store) claimLive(id keyID, token keystore.Token) (c keystore.Claim, enc []byte, live bool) {
	if s.index == nil {
		return keystore.Claim{}, nil, false
	}
	slot, ok := s.index[id]
	if !ok {
		return keystore.Claim{}, nil, false
	}
	return s.live(slot, token, s.now())
}

// live is the Claim of the key in slot at now, when it is live (see
// claimLive). s.mu is held, shared or exclusive.
func (s *Store) live(slot int32, token keystore.Token, now int64) (c keystore.Claim, enc []byte, live bool) {
	e := s.entry(slot)
	switch {
	case e.deadline <= now || e.state == released:
		return keystore.Claim{}, nil, false
	case e.state == inFlight && e.token == token: // the holder's Claim, repeated
		return keystore.Claim{Acquired: true, State: keystore.InFlight, Fingerprint: e.fp}, nil, true
	case e.state == inFlight:
		return keystore.Claim{State: keystore.InFlight, Fingerprint: e.fp, LeaseRemaining: time.Duration(e.deadline - now)}, nil, true
	}
	return keystore.Claim{State: keystore.Completed, Fingerprint: e.fp}, *s.rec(slot), true
}

// Extend implements keystore.Store. Extend by the token that completed the
// key succeeds and changes nothing while the record is kept.
func (s *Store) Extend(ctx context.Context, key string, token keystore.Token, lease time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if lease <= 0 {
		return 0, errDuration
	}
	id := idOf(key) // outside the lock, as in Claim
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.held(id, token, now)
	if slot < 0 {
		if s.ended(id, token, completed, now) >= 0 {
			return 0, nil
		}
		return 0, keystore.ErrLeaseLost
	}
	e := s.entry(slot)
	remaining := time.Duration(e.deadline - now)
	e.deadline = now + int64(lease)
	s.leases.fix(e.pos)
	return remaining, nil
}

// Complete implements keystore.Store: it keeps a copy of rec, which every
// Claim returns. Complete repeated by the token that completed the key,
// with the same bytes, succeeds and changes nothing. The store reads the
// bytes (see keystore.Store's Complete): bytes that are not the
// middleware's record encoding, exactly as it writes it, fail with
// keystore.ErrCorruptRecord, and a status outside 200–599 with
// keystore.ErrInvalidStatus.
func (s *Store) Complete(ctx context.Context, key string, token keystore.Token, rec []byte, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if retention <= 0 {
		return errDuration
	}
	if _, err := record.Check(rec); err != nil {
		return fmt.Errorf("memstore: complete: %w", err)
	}
	// The key's ID and the store's copy of rec are made before the lock,
	// which every request's Claim and Complete take: the allocation (and
	// any collection work it is charged) holds up no other request. A
	// Complete that fails drops the copy.
	id := idOf(key)
	own := append(make([]byte, 0, len(rec)), rec...)
	defer s.logEvictions()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.held(id, token, now)
	if slot < 0 {
		// Equal records have equal encodings.
		if done := s.ended(id, token, completed, now); done >= 0 && bytes.Equal(*s.rec(done), rec) {
			return nil
		}
		return keystore.ErrLeaseLost
	}
	// The record's real size replaces the claim's reservation.
	grow := entryOverhead + int64(len(key)) + int64(len(rec)) - s.entry(slot).size
	// Take the entry out of the lease heap first so that making room can
	// never consider it; put it back unchanged if there is no room.
	s.leases.remove(s.entry(slot).pos)
	if grow > 0 && !s.makeRoom(0, grow, now, true) {
		s.leases.push(slot)
		s.refused++
		return &keystore.FullError{RetryAfter: s.nextFree(now)}
	}
	e := s.entry(slot)
	e.state = completed
	*s.rec(slot) = own
	e.size += grow
	s.bytes += grow
	e.deadline = now + int64(retention)
	e.done = now
	s.records.push(slot)
	s.ages.push(slot)
	return nil
}

// Release implements keystore.Store. The released entry is kept, not held
// (charged only its key, and dropped when the store needs its room),
// without TookOver for the claim that replaces it, so that Release
// repeated by the same token succeeds and changes nothing until the key is
// claimed again (or, at most, for a minute); its client's claim of it
// again is not a new key (see Clients under contention). A Release by a token
// that does not hold the key marks the token spent on the key's entry, or
// leaves a released entry fencing it (released by no one) on an absent
// key, so that a Claim with that token never acquires the key, and a
// repeat of that Release fails too; such a mark on an absent key is dropped,
// like a released entry, when the store needs the room. (A memstore Claim
// cannot reach the store after its caller has given up on it, so the mark
// is there for the contract's sake.)
func (s *Store) Release(ctx context.Context, key string, token keystore.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id := idOf(key) // outside the lock, as in Claim
	defer s.logEvictions()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	now := s.now()
	slot := s.held(id, token, now)
	if slot < 0 {
		if s.ended(id, token, released, now) >= 0 {
			return nil
		}
		s.fence(id, int64(len(key)), token, now)
		return keystore.ErrLeaseLost
	}
	e := s.entry(slot)
	s.leases.remove(e.pos)
	e.state = released
	e.deadline = now
	s.releases.push(slot)
	// A released entry is charged only its key, whatever its claim was charged.
	keep := entryOverhead + int64(len(key))
	s.bytes -= e.size - keep
	e.size = keep
	s.released++
	s.releasedBytes += keep
	return nil
}

// fence makes sure token, which does not hold the key whose ID is id (and
// whose length is keyLen), never acquires it: it marks the token spent on
// the key's entry, or, for an absent key, leaves a released entry of the
// token's. s.mu is held.
func (s *Store) fence(id keyID, keyLen int64, token keystore.Token, now int64) {
	if slot, ok := s.index[id]; ok {
		if e := s.entry(slot); e.state != completed || e.deadline <= now {
			e.fenced = token
		}
		return
	}
	size := entryOverhead + keyLen
	if !s.makeRoom(1, size, now, false) { // a fence never evicts a record
		return
	}
	slot := s.alloc()
	// No releaser (token 0, never issued): the token is fenced, it did not
	// release the key, so a repeat of its Release fails too.
	*s.entry(slot) = entry{id: id, fenced: token, deadline: now, size: size, state: released}
	s.index[id] = slot
	s.bytes += size
	s.releases.push(slot)
	s.released++
	s.releasedBytes += size
}

// Stats returns a snapshot of the store's contents.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Entries: len(s.index) - s.released, Bytes: s.bytes, Refused: s.refused, Evicted: s.evicted}
}
