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
// bytes of keys and records. When a new claim or record would exceed either
// limit, the store first drops expired entries, then the completed records
// closest to the end of their retention. It never drops a key that is in
// flight, because that would let a second request run while the first one
// still does; when only in-flight keys remain, Claim fails with
// [keystore.ErrStoreFull] (the middleware answers 503, and the sender
// retries). Dropping a completed record early means a retry of that request
// would run the handler again, so size the limits for the sender's whole
// retry window; [Store.Stats] reports evictions.
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
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// Default limits, used where Config leaves a field zero.
const (
	DefaultMaxEntries = 100_000
	DefaultMaxBytes   = 64 << 20
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
	// (each entry is charged a fixed overhead too). Default DefaultMaxBytes.
	MaxBytes int64
}

// Stats is a snapshot of a Store's contents.
type Stats struct {
	Entries int    // keys held, in flight or completed
	Bytes   int64  // bytes charged against Config.MaxBytes
	Evicted uint64 // completed records dropped before their retention ended
}

// Store is an in-memory keystore.Store. The zero value is an empty store with
// the default limits. A Store must not be copied after first use.
//
// Store never returns an error other than keystore.ErrLeaseLost,
// keystore.ErrStoreFull, an error for a non-positive duration, or the
// context's error when the context is already done.
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
	evicted   uint64
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
	token    keystore.Token // nonzero while in flight
	deadline int64          // lease expiry while in flight, end of retention once completed
	size     int64
	pos      int32 // position in its heap
}

func (e *entry) inFlight() bool { return e.token != 0 }

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

func (s *Store) limits() (int, int64) {
	n, b := s.cfg.MaxEntries, s.cfg.MaxBytes
	if n <= 0 {
		n = DefaultMaxEntries
	}
	if b <= 0 {
		b = DefaultMaxBytes
	}
	return n, b
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
		if e.deadline > now {
			if e.inFlight() {
				return keystore.Claim{State: keystore.InFlight, Fingerprint: e.fp, LeaseRemaining: time.Duration(e.deadline - now)}, nil
			}
			return keystore.Claim{State: keystore.Completed, Fingerprint: e.fp, Record: decodeRecord(s.recs[slot])}, nil
		}
		tookOver = e.inFlight()
		s.remove(slot)
	}
	s.dropExpired(now)
	size := entryOverhead + int64(len(key))
	if !s.makeRoom(1, size, now) {
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
	if e := &s.entries[slot]; !e.inFlight() || e.token != token || e.deadline <= now {
		return -1
	}
	return slot
}

// Extend implements keystore.Store.
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
		return keystore.ErrLeaseLost
	}
	s.entries[slot].deadline = now + int64(lease)
	s.leases.fix(s.entries[slot].pos)
	return nil
}

// Complete implements keystore.Store.
func (s *Store) Complete(ctx context.Context, key string, token keystore.Token, rec keystore.Record, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if retention <= 0 {
		return errDuration
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.held(key, token, now)
	if slot < 0 {
		return keystore.ErrLeaseLost
	}
	data := encodeRecord(rec)
	grow := int64(len(data))
	// Take the entry out of the lease heap first so that making room can
	// never consider it; put it back unchanged if there is no room.
	s.leases.remove(s.entries[slot].pos)
	if !s.makeRoom(0, grow, now) {
		s.leases.push(slot)
		return keystore.ErrStoreFull
	}
	e := &s.entries[slot]
	e.token = 0
	s.recs[slot] = data
	e.size += grow
	s.bytes += grow
	e.deadline = now + int64(retention)
	s.records.push(slot)
	return nil
}

// Release implements keystore.Store.
func (s *Store) Release(ctx context.Context, key string, token keystore.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slot := s.held(key, token, s.now())
	if slot < 0 {
		return keystore.ErrLeaseLost
	}
	s.remove(slot)
	return nil
}

// Stats returns a snapshot of the store's contents.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Entries: len(s.index), Bytes: s.bytes, Evicted: s.evicted}
}

// Close drops every entry. It exists so that a Store can stand wherever a
// closable store is expected; a Store starts no goroutine, and it remains
// usable, and empty, after Close. It always returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index, s.entries, s.recs, s.free, s.leases.slots, s.records.slots, s.bytes = nil, nil, nil, nil, nil, nil, 0
	return nil
}

// remove deletes the entry in slot from the index and from whichever heap
// holds it, and frees the slot.
func (s *Store) remove(slot int32) {
	e := &s.entries[slot]
	if e.inFlight() {
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

// makeRoom evicts until addEntries more entries and addBytes more bytes fit,
// and reports whether they do. It drops expired leases first, then the
// completed records closest to the end of their retention; it never drops a
// live lease.
func (s *Store) makeRoom(addEntries int, addBytes int64, now int64) bool {
	maxEntries, maxBytes := s.limits()
	if addBytes > maxBytes {
		return false // nothing could make room: evict nothing
	}
	fits := func() bool {
		return len(s.index)+addEntries <= maxEntries && s.bytes+addBytes <= maxBytes
	}
	for !fits() && len(s.leases.slots) > 0 && s.entries[s.leases.slots[0]].deadline <= now {
		s.remove(s.leases.slots[0])
	}
	for !fits() && len(s.records.slots) > 0 {
		s.remove(s.records.slots[0])
		s.evicted++
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
