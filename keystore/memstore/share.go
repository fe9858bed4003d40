package memstore

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/geoidem/geoidem/keystore"
)

// clientUse is what one client holds: the claims made for it
// (keystore.ClaimArgs.Client), and their bytes.
type clientUse struct {
	name     string
	entries  int // released ones included
	released int // entries released: kept, not held
	bytes    int64
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

// contended reports whether a new entry of size bytes would leave less
// free than the headroom. Released entries are not held: the store drops
// them whenever it needs their room.
func (s *Store) contended(size int64) bool {
	maxN, maxB := s.limits()
	hN, hB := s.headroom()
	return len(s.index)-s.released+1 > maxN-hN || s.bytes-s.releasedBytes+size > maxB-hB
}

// admitClient decides, under contention, whether client may acquire one
// more entry of size bytes (a new key when newKey; a key it takes over or
// claims again after a release is never refused): it returns the refusal,
// or whether the acquisition takes a token of the client's rate (see
// takeToken).
func (s *Store) admitClient(client string, size int64, newKey bool, now int64) (token bool, refusal error) {
	if !newKey || !s.contended(size) {
		return false, nil // no share, no rate
	}
	shareN, shareB := s.clientLimits()
	i, ok := s.clients[client]
	if !ok {
		if shareB > 0 && size > shareB {
			return false, &keystore.FullError{Client: true}
		}
		r, _ := s.clientRate()
		return r > 0, nil // a newcomer: under its share, its bucket full
	}
	u := &s.clientUse[i]
	if (shareN > 0 && u.entries-u.released+1 > shareN) || (shareB > 0 && u.bytes+size > shareB) {
		// Room frees when one of the client's entries ends, or when the
		// contention does: the earliest is when any entry ends.
		return false, &keystore.FullError{Client: true, RetryAfter: s.contentionEnd(now)}
	}
	r, _ := s.clientRate()
	if r == 0 {
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
