package memstore

import "time"

// abandonedGrace is how long an expired lease is kept, so that the claim
// which takes it over can report keystore.Claim.TookOver, before it is
// removed like any expired entry.
const abandonedGrace = time.Minute

// dropExpired removes completed entries past their retention and in-flight
// entries whose lease expired more than abandonedGrace ago.
func (s *Store) dropExpired(now int64) {
	for len(s.records.slots) > 0 && s.entry(s.records.slots[0]).deadline <= now {
		s.remove(s.records.slots[0])
	}
	for len(s.leases.slots) > 0 && s.entry(s.leases.slots[0]).deadline <= now-int64(abandonedGrace) {
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
	for !fits() && len(s.leases.slots) > 0 && s.entry(s.leases.slots[0]).deadline <= now {
		s.remove(s.leases.slots[0])
	}
	return fits()
}
