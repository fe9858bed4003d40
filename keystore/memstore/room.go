package memstore

import (
	"log/slog"
	"time"
)

// abandonedGrace is how long an expired lease is kept, so that the claim
// which takes it over can report keystore.Claim.TookOver, before it is
// removed like any expired entry; and how long a released entry is kept
// for a repeated Release.
const abandonedGrace = time.Minute

// dropExpired removes completed entries past their retention, and in-flight
// and released entries whose lease expired, or which were released, more
// than abandonedGrace ago.
func (s *Store) dropExpired(now int64) {
	for e := s.records.top(); e != nil && e.deadline <= now; e = s.records.top() {
		s.remove(s.records.slots[0])
	}
	for e := s.leases.top(); e != nil && e.deadline <= now-int64(abandonedGrace); e = s.leases.top() {
		s.remove(s.leases.slots[0])
	}
	for e := s.releases.top(); e != nil && e.deadline <= now-int64(abandonedGrace); e = s.releases.top() {
		s.remove(s.releases.slots[0])
	}
}

// makeRoom drops entries until addEntries more entries and addBytes more
// bytes fit, and reports whether they do. It drops, in this order and
// only as far as it must: completed records past their retention and
// leases past their grace period; released entries; leases that expired
// within their grace; and, with evict and when eviction is on
// (Config.EvictAfter), completed records older than the floor, oldest
// first. It never drops a key in flight whose lease runs, nor a record
// younger than the floor before the end of its retention.
func (s *Store) makeRoom(addEntries int, addBytes int64, now int64, evict bool) bool {
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
	for !fits() && len(s.releases.slots) > 0 {
		s.remove(s.releases.slots[0])
	}
	for e := s.leases.top(); !fits() && e != nil && e.deadline <= now; e = s.leases.top() {
		s.remove(s.leases.slots[0])
	}
	if floor, ok := s.floor(); ok && evict {
		for e := s.ages.top(); !fits() && e != nil && e.done <= now-int64(floor); e = s.ages.top() {
			s.evictLog.add(time.Duration(now-e.done), now)
			s.evicted++
			s.remove(s.ages.slots[0])
		}
		if s.evictLog.due {
			s.evictDue.Store(true)
		}
	}
	return fits()
}

// nextFree returns how long until a full store can next make room by
// itself: the earliest end of a lease or a retention, or the earliest
// time a record passes the eviction floor; zero when there is none.
func (s *Store) nextFree(now int64) time.Duration {
	next := int64(0)
	earliest := func(d int64) {
		if d > now && (next == 0 || d < next) {
			next = d
		}
	}
	if e := s.records.top(); e != nil {
		earliest(e.deadline)
	}
	if e := s.leases.top(); e != nil {
		earliest(e.deadline)
	}
	if e := s.ages.top(); e != nil {
		if floor, ok := s.floor(); ok {
			earliest(e.done + int64(floor))
		}
	}
	if next == 0 {
		return 0
	}
	return time.Duration(next - now)
}

// evictLog gathers evictions for the log: the first at once, then at most
// one line a minute with those since the last.
type evictLog struct {
	n      uint64        // evictions not yet logged
	oldest time.Duration // the age of the oldest of them
	last   int64         // when the last line was due (a deadline value)
	logged bool          // whether a line was ever due
	due    bool          // a line is due
}

// add counts an eviction of a record of age age at now.
func (l *evictLog) add(age time.Duration, now int64) {
	l.n++
	l.oldest = max(l.oldest, age)
	if !l.logged || now-l.last >= int64(time.Minute) {
		l.due, l.logged, l.last = true, true, now
	}
}

// logEvictions logs the evictions gathered, when a line is due. It takes
// s.mu, which the caller must not hold.
func (s *Store) logEvictions() {
	if !s.evictDue.Load() {
		return
	}
	s.mu.Lock()
	n, oldest, log := s.evictLog.n, s.evictLog.oldest, s.cfg.Logger
	s.evictLog.n, s.evictLog.oldest, s.evictLog.due = 0, 0, false
	s.evictDue.Store(false)
	total := s.evicted
	s.mu.Unlock()
	if log != nil && n > 0 {
		log.Warn("memstore: the store is full: completed records evicted before the end of their retention; a retry of their requests runs again",
			slog.Uint64("evicted", n), slog.Duration("oldest_age", oldest), slog.Uint64("evicted_total", total))
	}
}
