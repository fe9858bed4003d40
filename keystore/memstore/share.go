package memstore

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/geoidem/geoidem/keystore"
)

// clientUse is what one client holds: the claims made for it
// (keystore.ClaimArgs.Client), and their bytes.
type clientUse struct {
	name    string
	entries int
	bytes   int64
	// nextFree caches when the client's earliest entry ends (a deadline
	// value); recomputed once it has passed.
	nextFree int64
	// lim is the client's rate under contention, made at its first new
	// key under contention (full until then).
	lim *rate.Limiter
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

// admitClient decides, under contention, whether client may acquire one
// more entry of size bytes (a new key when newKey): it returns the
// refusal, or whether the acquisition takes a token of the client's rate
// (see takeToken).
func (s *Store) admitClient(client string, size int64, newKey bool, now int64) (token bool, refusal error) {
	maxN, maxB := s.limits()
	hN, hB := s.headroom()
	if len(s.index)+1 <= maxN-hN && s.bytes+size <= maxB-hB {
		return false, nil // not contended: no share, no rate
	}
	shareN, shareB := s.clientLimits()
	i, ok := s.clients[client]
	if !ok {
		if shareB > 0 && size > shareB {
			return false, &keystore.FullError{Client: true}
		}
		r, _ := s.clientRate()
		return newKey && r > 0, nil // a newcomer: under its share, its bucket full
	}
	u := &s.clientUse[i]
	if (shareN > 0 && u.entries+1 > shareN) || (shareB > 0 && u.bytes+size > shareB) {
		return false, &keystore.FullError{Client: true, RetryAfter: s.clientNextFree(i, now)}
	}
	r, _ := s.clientRate()
	if !newKey || r == 0 {
		return false, nil
	}
	if u.lim != nil {
		if tokens := u.lim.TokensAt(s.at(now)); tokens < 1 {
			wait := time.Duration((1 - tokens) / r * float64(time.Second))
			return false, &keystore.FullError{Client: true, RetryAfter: max(wait, time.Millisecond)}
		}
	}
	return true, nil
}

// takeToken takes a token of client i's rate, making its bucket if it has
// none. admitClient has seen that there is one.
func (s *Store) takeToken(i int32, now int64) {
	u := &s.clientUse[i]
	if u.lim == nil {
		r, b := s.clientRate()
		u.lim = rate.NewLimiter(rate.Limit(r), b)
	}
	u.lim.AllowN(s.at(now), 1)
}

// at returns the time of the deadline value now.
func (s *Store) at(now int64) time.Time { return s.base.Add(time.Duration(now)) }

// clientNextFree returns how long until client i's earliest entry ends,
// zero when the store cannot tell.
func (s *Store) clientNextFree(i int32, now int64) time.Duration {
	u := &s.clientUse[i]
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
		return 0
	}
	return time.Duration(u.nextFree - now)
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
