package memstore

// A store that grows adds a page of entries and one of records every
// pageSize slots, and, every time its slots double, larger arrays for its
// heaps, its free list and its page lists. Allocated under the lock, they
// held every other request up while the allocation ran, and any collection
// work it was charged: at 64 clients over loopback HTTP, a lock held for
// about a microsecond was held for up to milliseconds at each page. So a
// Claim that may add a key allocates what the next page needs before it
// takes the lock (prepare), when the store asks for it, and the lock
// installs it (install): the pages are added, and the arrays replaced,
// with no allocation. Claims race to prepare; the first spare installed
// is kept, the others are dropped. Without a spare (a Release that leaves
// a fence, or a race lost to a page boundary) the lock allocates, as
// before.

// spare is what the store needs for its next page.
type spare struct {
	entries *entryPage
	recs    *recPage
	// With capacity for the slots once the page is added, or nil when the
	// arrays in use have room: the heaps and the free list (each holds at
	// most one position per slot), and the page lists.
	heaps    [5][]int32
	entryDir []*entryPage
	recDir   []*recPage
}

// prepare returns a spare for the store's next page when it asks for
// one, else nil. It runs without the lock.
func (s *Store) prepare() *spare {
	if s.spared.Load() {
		return nil
	}
	c := 0
	if !s.roomy.Load() {
		c = max(int(s.wantCap.Load()), 2*pageSize) // the first page's: zero values
	}
	return newSpare(c)
}

// newSpare returns a spare whose arrays have capacity for c slots, or
// none when c is zero.
func newSpare(c int) *spare {
	sp := &spare{entries: new(entryPage), recs: new(recPage)}
	if c > 0 {
		all := make([]int32, len(sp.heaps)*c) // one allocation for the five
		for i := range sp.heaps {
			sp.heaps[i] = all[i*c : i*c : (i+1)*c]
		}
		sp.entryDir = make([]*entryPage, 0, c/pageSize)
		sp.recDir = make([]*recPage, 0, c/pageSize)
	}
	return sp
}

// install keeps sp, if the store has no spare and sp has what the next
// page needs. s.mu is held.
func (s *Store) install(sp *spare) {
	if sp == nil || s.spare != nil {
		return
	}
	if need := s.slotCap() + pageSize; !fits(sp, need, s.arrayCap() >= need) {
		return // prepared before the arrays last grew
	}
	s.spare = sp
	s.spared.Store(true)
}

// fits reports whether sp has what a page that needs room for need slots
// takes: its arrays, unless the store's have room (roomy).
func fits(sp *spare, need int, roomy bool) bool {
	return roomy || cap(sp.heaps[0]) >= need
}

// slotCap returns the slots the pages hold. s.mu is held.
func (s *Store) slotCap() int { return len(s.entries) * pageSize }

// arrayCap returns the least capacity, in slots, of the arrays that grow
// with the store. s.mu is held.
func (s *Store) arrayCap() int {
	c := min(cap(s.entries), cap(s.recs)) * pageSize
	for _, h := range s.arrays() {
		c = min(c, cap(*h))
	}
	return c
}

// arrays returns the heaps' arrays and the free list.
func (s *Store) arrays() [5]*[]int32 {
	return [5]*[]int32{&s.leases.slots, &s.records.slots, &s.ages.slots, &s.releases.slots, &s.free}
}

// addPage adds a page, from the spare if there is one, and asks for the
// spare of the next. Then every array has room for every slot, and a
// push or a free never allocates. s.mu is held.
func (s *Store) addPage() {
	need := s.slotCap() + pageSize
	roomy := s.arrayCap() >= need
	sp := s.spare
	s.spare = nil
	if sp == nil || !fits(sp, need, roomy) {
		c := 0
		if !roomy {
			c = 2 * need
		}
		sp = newSpare(c) // without a spare: allocate under the lock
	}
	if !roomy {
		for i, h := range s.arrays() {
			*h = append(sp.heaps[i], *h...)
		}
		s.entries = append(sp.entryDir, s.entries...)
		s.recs = append(sp.recDir, s.recs...)
	}
	s.entries = append(s.entries, sp.entries)
	s.recs = append(s.recs, sp.recs)
	next := s.slotCap() + pageSize
	s.roomy.Store(s.arrayCap() >= next)
	s.wantCap.Store(int32(2 * next))
	s.spared.Store(false)
}
