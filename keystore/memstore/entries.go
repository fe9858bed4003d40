package memstore

import (
	"github.com/geoidem/geoidem/keystore"
)

// entryOverhead approximates the bytes an entry costs beyond its key and
// record: the map slot, the entry struct and its heap slot.
const entryOverhead = 160

type entry struct {
	id       keyID
	fp       keystore.Fingerprint
	token    keystore.Token // the token that holds the key, or that completed or released it
	fenced   keystore.Token // a token released without holding the key: it never acquires it (see Release)
	deadline int64          // lease expiry while in flight, end of retention once completed, the release once released
	done     int64          // when it was completed (a deadline value), once completed
	size     int64
	pos      int32 // position in its heap: leases, records or releases
	agePos   int32 // position in the heap of records by age, once completed
	state    entryState
}

// entryState says what an entry is. A released entry is kept, in the heap
// of releases, so that a repeated Release by its token succeeds until the
// key is claimed again or the entry is dropped (a minute after the release,
// or at once when the store needs its room).
type entryState uint8

const (
	inFlight entryState = iota
	completed
	released
)

// spent reports whether a Claim with token must not acquire the entry's
// key: the token released it, or was released without holding it.
func (e *entry) spent(token keystore.Token) bool {
	return e.fenced == token || e.state == released && e.token == token
}

// heap returns the heap by deadline that holds the entry: leases (in
// flight), records (completed) or releases (released).
func (s *Store) heap(e *entry) *slotHeap {
	switch e.state {
	case completed:
		return &s.records
	case released:
		return &s.releases
	}
	return &s.leases
}

// Entries and their records are kept in pages of pageSize slots, added as
// the store grows and never moved: a new entry never copies the ones before
// it, as a slab grown by append does each time it doubles.
const (
	pageBits = 8
	pageSize = 1 << pageBits
)

type (
	entryPage [pageSize]entry
	recPage   [pageSize][]byte
)

// entry returns the entry in slot.
func (s *Store) entry(slot int32) *entry { return &s.entries[slot>>pageBits][slot&(pageSize-1)] }

// rec returns the record in slot: the encoding of a completed entry's
// record, nil for any other.
func (s *Store) rec(slot int32) *[]byte { return &s.recs[slot>>pageBits][slot&(pageSize-1)] }

// alloc returns a free slot, adding a page when every slot is in use
// (see addPage).
func (s *Store) alloc() int32 {
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		return slot
	}
	slot := s.slots
	if slot&(pageSize-1) == 0 {
		s.addPage()
	}
	s.slots++
	return slot
}

// held returns the slot of the in-flight entry of the key whose ID is id
// that token holds, or -1.
func (s *Store) held(id keyID, token keystore.Token, now int64) int32 {
	slot, ok := s.index[id]
	if !ok {
		return -1
	}
	if e := s.entry(slot); e.state != inFlight || e.token != token || e.deadline <= now {
		return -1
	}
	return slot
}

// ended returns the slot of the entry of the key whose ID is id that token
// completed (with its record still kept) or released, whichever state is,
// or -1.
func (s *Store) ended(id keyID, token keystore.Token, state entryState, now int64) int32 {
	slot, ok := s.index[id]
	if !ok {
		return -1
	}
	e := s.entry(slot)
	if e.state != state || e.token != token || (state == completed && e.deadline <= now) {
		return -1
	}
	return slot
}

// remove deletes the entry in slot from the index and from whichever heap
// holds it, and frees the slot.
func (s *Store) remove(slot int32) {
	e := s.entry(slot)
	switch e.state {
	case released:
		s.released--
		s.releasedBytes -= e.size
	case completed:
		s.ages.remove(e.agePos)
	}
	s.heap(e).remove(e.pos)
	delete(s.index, e.id)
	s.bytes -= e.size
	*e = entry{}
	*s.rec(slot) = nil // drop the record for the collector
	s.free = append(s.free, slot)
}
