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
// entries; if that is not enough, Claim fails with [keystore.ErrStoreFull]
// (the middleware answers 503 with Retry-After, nothing runs, and the sender
// retries later). A full store therefore refuses new keys until records
// reach the end of their retention: size the limits for the traffic of a
// whole retention period, and rate-limit before the middleware.
// [Store.Stats] counts the refusals.
//
// Each claim is charged, from Claim until Complete or Release, for
// [Config.ReserveBytes] as well as its key: room for the record it will
// complete with. Complete then charges the record's real size instead, so a
// record no larger than the reservation always fits, and the answer of a
// handler that ran is never lost for want of room. A larger record takes
// the difference from the free budget (dropping expired entries if it must)
// and is refused with ErrStoreFull when there is none. Set ReserveBytes to
// at least the middleware's MaxRecordBytes plus the replayed headers (the
// default covers the middleware's defaults); it also bounds the claims in
// flight at once to MaxBytes / ReserveBytes.
//
// # Scope
//
// Keys live in one process: two replicas behind a load balancer do not see
// each other's keys. Use the Redis or PostgreSQL store for that.
package memstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// Default limits, used where Config leaves a field zero.
const (
	DefaultMaxEntries = 100_000
	DefaultMaxBytes   = 128 << 20
	// DefaultReserveBytes is the middleware's default MaxRecordBytes (1 MiB)
	// plus 8 KiB for the replayed headers and the record's encoding.
	DefaultReserveBytes = 1<<20 + 8<<10
)

// entryOverhead approximates the bytes an entry costs beyond its key and
// record: the map slot, the entry struct and its heap slot.
const entryOverhead = 160

// abandonedGrace is how long an expired lease is kept, so that the claim
// which takes it over can report keystore.Claim.TookOver, before it is
// removed like any expired entry.
const abandonedGrace = time.Minute

// Config holds a Store's limits. Zero fields mean the defaults.
type Config struct {
	// MaxEntries bounds the number of keys held. Default DefaultMaxEntries.
	MaxEntries int
	// MaxBytes bounds the bytes of keys and records held, approximately
	// (each entry is charged a fixed overhead too), reservations of the
	// claims in flight included. Default DefaultMaxBytes.
	MaxBytes int64
	// ReserveBytes is charged for each claim in flight, as room for its
	// record: see "Bounded memory" above. Default DefaultReserveBytes, or
	// MaxBytes/16 when that is smaller; negative means no reservation (a
	// record is charged only at Complete, which may then refuse it).
	ReserveBytes int64
}

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
	entries   []entry         // a slab without pointers: the collector never scans it
	recs      [][]byte        // encoded records, by slot: the only pointers per entry
	free      []int32         // unused slots
	leases    slotHeap        // in-flight slots, by lease expiry
	records   slotHeap        // completed slots, by end of retention
	bytes     int64
	lastToken keystore.Token
	refused   uint64
	released  int // entries kept after Release (see Release), not counted as held
}

// New returns an empty Store with the given limits.
func New(cfg Config) *Store {
	return &Store{cfg: cfg}
}

// keyID identifies a key in the index: the 32 bytes that a 64-character
// hexadecimal key (what the middleware passes) spells, or the SHA-256 of any
// other key. Telling two keys apart by their IDs would take a SHA-256
// preimage.
type keyID [32]byte

func idOf(key string) keyID {
	var id keyID
	if len(key) != 2*len(id) {
		return sha256.Sum256([]byte(key))
	}
	for i := range id {
		hi, ok1 := lowerHex(key[2*i])
		lo, ok2 := lowerHex(key[2*i+1])
		if !ok1 || !ok2 { // only lowercase digits: "AB" and "ab" must not share an ID
			return sha256.Sum256([]byte(key))
		}
		id[i] = hi<<4 | lo
	}
	return id
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

type entry struct {
	id       keyID
	fp       keystore.Fingerprint
	token    keystore.Token // the token that holds the key, or that completed or released it
	deadline int64          // lease expiry while in flight, end of retention once completed, the release once released
	size     int64
	pos      int32 // position in its heap
	state    entryState
}

// entryState says what an entry is. A released entry stays in the lease heap
// as a lease that ended when it was released, so that a repeated Release by
// its token succeeds until the key is claimed again or the entry is dropped
// like any expired lease.
type entryState uint8

const (
	inFlight entryState = iota
	completed
	released
)

// inLeaseHeap reports whether the entry belongs in the lease heap (in flight
// or released) rather than the record heap (completed).
func (e *entry) inLeaseHeap() bool { return e.state != completed }

var (
	_ keystore.Store       = (*Store)(nil)
	_ keystore.NonBlocking = (*Store)(nil)
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

func (s *Store) limits() (n int, b int64) {
	n, b = s.cfg.MaxEntries, s.cfg.MaxBytes
	if n <= 0 {
		n = DefaultMaxEntries
	}
	if b <= 0 {
		b = DefaultMaxBytes
	}
	return n, b
}

// reserve returns the bytes charged for a claim's record while it is in
// flight.
func (s *Store) reserve() int64 {
	r := s.cfg.ReserveBytes
	switch {
	case r < 0:
		return 0
	case r == 0:
		_, b := s.limits()
		return min(DefaultReserveBytes, b/16)
	}
	return r
}

// Claim implements keystore.Store.
func (s *Store) Claim(ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (keystore.Claim, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Claim{}, err
	}
	if lease <= 0 {
		return keystore.Claim{}, errDuration
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	now := s.now()
	id := idOf(key)
	tookOver := false
	if slot, ok := s.index[id]; ok {
		e := &s.entries[slot]
		if e.deadline > now && e.state != released {
			if e.state == inFlight {
				return keystore.Claim{State: keystore.InFlight, Fingerprint: e.fp, LeaseRemaining: time.Duration(e.deadline - now)}, nil
			}
			return keystore.Claim{State: keystore.Completed, Fingerprint: e.fp, Record: decodeRecord(s.recs[slot])}, nil
		}
		tookOver = e.state == inFlight
		s.remove(slot)
	}
	s.dropExpired(now)
	size := entryOverhead + int64(len(key)) + s.reserve()
	if !s.makeRoom(1, size, now) {
		s.refused++
		return keystore.Claim{}, keystore.ErrStoreFull
	}
	s.lastToken++
	slot := s.alloc()
	s.entries[slot] = entry{id: id, fp: fp, token: s.lastToken, deadline: now + int64(lease), size: size}
	s.index[id] = slot
	s.bytes += size
	s.leases.push(slot)
	return keystore.Claim{State: keystore.Acquired, Token: s.lastToken, TookOver: tookOver, Fingerprint: fp}, nil
}

func (s *Store) alloc() int32 {
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		return slot
	}
	s.entries = append(s.entries, entry{})
	s.recs = append(s.recs, nil)
	return int32(len(s.entries) - 1)
}

// held returns the slot of the in-flight entry that token holds, or -1.
func (s *Store) held(key string, token keystore.Token, now int64) int32 {
	slot, ok := s.index[idOf(key)]
	if !ok {
		return -1
	}
	if e := &s.entries[slot]; e.state != inFlight || e.token != token || e.deadline <= now {
		return -1
	}
	return slot
}

// ended returns the slot of the entry that token completed (with its record
// still kept) or released, whichever state is, or -1.
func (s *Store) ended(key string, token keystore.Token, state entryState, now int64) int32 {
	slot, ok := s.index[idOf(key)]
	if !ok {
		return -1
	}
	e := &s.entries[slot]
	if e.state != state || e.token != token || (state == completed && e.deadline <= now) {
		return -1
	}
	return slot
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
	s.entries[slot].deadline = now + int64(lease)
	s.leases.fix(s.entries[slot].pos)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.held(key, token, now)
	if slot < 0 {
		if done := s.ended(key, token, completed, now); done >= 0 && sameRecord(s.recs[done], rec) {
			return nil
		}
		return keystore.ErrLeaseLost
	}
	data := encodeRecord(rec)
	// The record's real size replaces the claim's reservation.
	grow := entryOverhead + int64(len(key)) + int64(len(data)) - s.entries[slot].size
	// Take the entry out of the lease heap first so that making room can
	// never consider it; put it back unchanged if there is no room.
	s.leases.remove(s.entries[slot].pos)
	if grow > 0 && !s.makeRoom(0, grow, now) {
		s.leases.push(slot)
		s.refused++
		return keystore.ErrStoreFull
	}
	e := &s.entries[slot]
	e.state = completed
	s.recs[slot] = data
	e.size += grow
	s.bytes += grow
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
	e := &s.entries[slot]
	e.state = released
	e.deadline = now
	s.leases.fix(e.pos)
	// A released entry is charged only its key, whatever its claim was charged.
	keep := entryOverhead + int64(len(key))
	s.bytes -= e.size - keep
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
	s.index, s.entries, s.recs, s.free, s.leases.slots, s.records.slots, s.bytes, s.released = nil, nil, nil, nil, nil, nil, 0, 0
	return nil
}

// remove deletes the entry in slot from the index and from whichever heap
// holds it, and frees the slot.
func (s *Store) remove(slot int32) {
	e := &s.entries[slot]
	if e.state == released {
		s.released--
	}
	if e.inLeaseHeap() {
		s.leases.remove(e.pos)
	} else {
		s.records.remove(e.pos)
	}
	delete(s.index, e.id)
	s.bytes -= e.size
	*e = entry{}
	s.recs[slot] = nil // drop the record for the collector
	s.free = append(s.free, slot)
}

// dropExpired removes completed entries past their retention and in-flight
// entries whose lease expired more than abandonedGrace ago.
func (s *Store) dropExpired(now int64) {
	for len(s.records.slots) > 0 && s.entries[s.records.slots[0]].deadline <= now {
		s.remove(s.records.slots[0])
	}
	for len(s.leases.slots) > 0 && s.entries[s.leases.slots[0]].deadline <= now-int64(abandonedGrace) {
		s.remove(s.leases.slots[0])
	}
}

// makeRoom drops expired entries until addEntries more entries and addBytes
// more bytes fit, and reports whether they do. It drops completed records
// past their retention and leases past their grace period, then leases that
// expired within it; it never drops an unexpired entry.
func (s *Store) makeRoom(addEntries int, addBytes int64, now int64) bool {
	maxEntries, maxBytes := s.limits()
	fits := func() bool {
		return len(s.index)+addEntries <= maxEntries && s.bytes+addBytes <= maxBytes
	}
	if fits() {
		return true
	}
	if addBytes > maxBytes {
		return false // nothing could make room: drop nothing
	}
	s.dropExpired(now)
	for !fits() && len(s.leases.slots) > 0 && s.entries[s.leases.slots[0]].deadline <= now {
		s.remove(s.leases.slots[0])
	}
	return fits()
}

// slotHeap is a min-heap of slots by their entries' deadlines that keeps
// each entry's pos current, so fix and remove work in O(log n). It holds
// int32s, not pointers: nothing in it for the collector to scan.
type slotHeap struct {
	s     *Store
	slots []int32
}

func (h *slotHeap) less(i, j int) bool {
	return h.s.entries[h.slots[i]].deadline < h.s.entries[h.slots[j]].deadline
}

func (h *slotHeap) swap(i, j int) {
	h.slots[i], h.slots[j] = h.slots[j], h.slots[i]
	h.s.entries[h.slots[i]].pos = int32(i)
	h.s.entries[h.slots[j]].pos = int32(j)
}

func (h *slotHeap) push(slot int32) {
	h.slots = append(h.slots, slot)
	i := len(h.slots) - 1
	h.s.entries[slot].pos = int32(i)
	h.up(i)
}

func (h *slotHeap) remove(pos int32) {
	i, last := int(pos), len(h.slots)-1
	if i != last {
		h.swap(i, last)
	}
	h.slots = h.slots[:last]
	if i != last {
		h.fixAt(i)
	}
}

func (h *slotHeap) fix(pos int32) { h.fixAt(int(pos)) }

func (h *slotHeap) fixAt(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *slotHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

// down sifts i down and reports whether it moved.
func (h *slotHeap) down(i0 int) bool {
	i, n := i0, len(h.slots)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
