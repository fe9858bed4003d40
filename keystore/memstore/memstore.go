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
	"container/heap"
	"context"
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
	entries   map[string]*entry
	leases    expiryHeap // in-flight entries, by lease expiry
	records   expiryHeap // completed entries, by end of retention
	bytes     int64
	lastToken keystore.Token
	evicted   uint64
}

// New returns an empty Store with the given limits.
func New(cfg Config) *Store {
	return &Store{cfg: cfg}
}

type entry struct {
	key      string
	fp       keystore.Fingerprint
	token    keystore.Token // nonzero while in flight
	deadline time.Time      // lease expiry while in flight, end of retention once completed
	rec      []byte         // the encoded record, once completed
	size     int64
	index    int // position in its heap
}

func (e *entry) inFlight() bool { return e.token != 0 }

var _ keystore.Store = (*Store)(nil)

var errDuration = errors.New("memstore: duration must be positive")

func (s *Store) init() {
	if s.entries == nil {
		s.entries = make(map[string]*entry)
	}
}

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
	now := time.Now()
	tookOver := false
	if e, ok := s.entries[key]; ok && e.deadline.After(now) {
		if e.inFlight() {
			return keystore.Claim{State: keystore.InFlight, Fingerprint: e.fp, LeaseRemaining: e.deadline.Sub(now)}, nil
		}
		return keystore.Claim{State: keystore.Completed, Fingerprint: e.fp, Record: decodeRecord(e.rec)}, nil
	} else if ok {
		tookOver = e.inFlight()
		s.remove(e)
	}
	s.dropExpired(now)
	e := &entry{key: key, fp: fp, deadline: now.Add(lease), size: entryOverhead + int64(len(key))}
	if !s.makeRoom(1, e.size) {
		return keystore.Claim{}, keystore.ErrStoreFull
	}
	s.lastToken++
	e.token = s.lastToken
	s.entries[key] = e
	s.bytes += e.size
	heap.Push(&s.leases, e)
	return keystore.Claim{State: keystore.Acquired, Token: e.token, TookOver: tookOver, Fingerprint: fp}, nil
}

// held returns the in-flight entry that token holds, or nil.
func (s *Store) held(key string, token keystore.Token, now time.Time) *entry {
	e, ok := s.entries[key]
	if !ok || !e.inFlight() || e.token != token || !e.deadline.After(now) {
		return nil
	}
	return e
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
	now := time.Now()
	e := s.held(key, token, now)
	if e == nil {
		return keystore.ErrLeaseLost
	}
	e.deadline = now.Add(lease)
	heap.Fix(&s.leases, e.index)
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
	now := time.Now()
	e := s.held(key, token, now)
	if e == nil {
		return keystore.ErrLeaseLost
	}
	data := encodeRecord(rec)
	grow := int64(len(data))
	// Take e out of the lease heap first so that making room can never
	// consider it; put it back unchanged if there is no room.
	heap.Remove(&s.leases, e.index)
	if !s.makeRoom(0, grow) {
		heap.Push(&s.leases, e)
		return keystore.ErrStoreFull
	}
	e.token = 0
	e.rec = data
	e.size += grow
	s.bytes += grow
	e.deadline = now.Add(retention)
	heap.Push(&s.records, e)
	return nil
}

// Release implements keystore.Store.
func (s *Store) Release(ctx context.Context, key string, token keystore.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.held(key, token, time.Now())
	if e == nil {
		return keystore.ErrLeaseLost
	}
	s.remove(e)
	return nil
}

// Stats returns a snapshot of the store's contents.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Entries: len(s.entries), Bytes: s.bytes, Evicted: s.evicted}
}

// Close drops every entry. It exists so that a Store can stand wherever a
// closable store is expected; a Store starts no goroutine, and it remains
// usable, and empty, after Close. It always returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries, s.leases, s.records, s.bytes = nil, nil, nil, 0
	return nil
}

// remove deletes e from the map and from whichever heap holds it.
func (s *Store) remove(e *entry) {
	if e.inFlight() {
		heap.Remove(&s.leases, e.index)
	} else {
		heap.Remove(&s.records, e.index)
	}
	delete(s.entries, e.key)
	s.bytes -= e.size
}

// dropExpired removes completed entries past their retention and in-flight
// entries whose lease expired more than abandonedGrace ago.
func (s *Store) dropExpired(now time.Time) {
	for len(s.records) > 0 && !s.records[0].deadline.After(now) {
		s.remove(s.records[0])
	}
	for len(s.leases) > 0 && !s.leases[0].deadline.After(now.Add(-abandonedGrace)) {
		s.remove(s.leases[0])
	}
}

// makeRoom evicts until addEntries more entries and addBytes more bytes fit,
// and reports whether they do. It drops expired leases first, then the
// completed records closest to the end of their retention; it never drops a
// live lease.
func (s *Store) makeRoom(addEntries int, addBytes int64) bool {
	maxEntries, maxBytes := s.limits()
	if addBytes > maxBytes {
		return false // nothing could make room: evict nothing
	}
	fits := func() bool {
		return len(s.entries)+addEntries <= maxEntries && s.bytes+addBytes <= maxBytes
	}
	now := time.Now()
	for !fits() && len(s.leases) > 0 && !s.leases[0].deadline.After(now) {
		s.remove(s.leases[0])
	}
	for !fits() && len(s.records) > 0 {
		s.remove(s.records[0])
		s.evicted++
	}
	return fits()
}

// expiryHeap is a min-heap of entries by deadline that keeps each entry's
// index current, so heap.Fix and heap.Remove work in O(log n).
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
