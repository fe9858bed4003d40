package memstore

import "time"

// clientUse is what one client holds: the claims made for it
// (keystore.ClaimArgs.Client), and their bytes.
type clientUse struct {
	name    string
	entries int
	bytes   int64
	// nextFree caches when the client's earliest entry ends (a deadline
	// value); recomputed once it has passed.
	nextFree int64
}

// clientIndex returns the index of client in clientUse, adding it.
func (s *Store) clientIndex(client string) int32 {
	if i, ok := s.clients[client]; ok {
		return i
	}
	if s.clients == nil {
		s.clients = map[string]int32{}
		s.clientUse = make([]clientUse, 1) // index 0: no client
	}
	var i int32
	if n := len(s.freeUse); n > 0 {
		i = s.freeUse[n-1]
		s.freeUse = s.freeUse[:n-1]
	} else {
		s.clientUse = append(s.clientUse, clientUse{})
		i = int32(len(s.clientUse) - 1)
	}
	s.clientUse[i] = clientUse{name: client}
	s.clients[client] = i
	return i
}

// chargeClient adds entries and bytes to client i's use (none for 0), and
// forgets a client that holds nothing any more.
func (s *Store) chargeClient(i int32, entries int, bytes int64) {
	if i == 0 {
		return
	}
	u := &s.clientUse[i]
	u.entries += entries
	u.bytes += bytes
	if u.entries == 0 {
		delete(s.clients, u.name)
		*u = clientUse{}
		s.freeUse = append(s.freeUse, i)
	}
}

// clientRoom reports whether client may claim one more entry of size
// bytes and, when it may not, how long until its earliest entry ends.
func (s *Store) clientRoom(client string, size int64, now int64) (time.Duration, bool) {
	maxN, maxB := s.clientLimits()
	i, ok := s.clients[client]
	if !ok {
		return 0, (maxB == 0 || size <= maxB)
	}
	u := &s.clientUse[i]
	if (maxN == 0 || u.entries+1 <= maxN) && (maxB == 0 || u.bytes+size <= maxB) {
		return 0, true
	}
	if u.nextFree <= now {
		// Once per end of an entry: scan for the client's earliest.
		u.nextFree = 0
		for slot := range s.slots {
			e := s.entry(slot)
			if e.client != i {
				continue
			}
			end := e.deadline
			if e.state != completed && end <= now {
				end += int64(abandonedGrace) // a lease that ended is dropped after its grace
			}
			if end > now && (u.nextFree == 0 || end < u.nextFree) {
				u.nextFree = end
			}
		}
	}
	if u.nextFree <= now {
		return 0, false
	}
	return time.Duration(u.nextFree - now), false
}

// nextFree returns how long until the earliest unexpired entry ends (a
// lease or a retention), zero when there is none.
func (s *Store) nextFree(now int64) time.Duration {
	next := int64(0)
	for _, h := range []*slotHeap{&s.records, &s.leases} {
		for _, slot := range h.slots[:min(1, len(h.slots))] {
			if d := s.entry(slot).deadline; d > now && (next == 0 || d < next) {
				next = d
			}
		}
	}
	if next == 0 {
		return 0
	}
	return time.Duration(next - now)
}
