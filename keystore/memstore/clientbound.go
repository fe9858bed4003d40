package memstore

import (
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// tally is a client's count of new keys under contention, in the window
// that ends at end (a deadline value).
type tally struct {
	n   int
	end int64
}

// clientWindow is a window in Store.windows, the queue of the windows
// that run, in the order they end (they all last ClientWindow): each
// client in Store.clients has one, with the end of its count.
type clientWindow struct {
	client string
	end    int64
}

// contended reports whether a new entry of size bytes would leave less
// free than the headroom. Released entries are not held: the store drops
// them whenever it needs their room.
func (s *Store) contended(size int64) bool {
	maxN, maxB := s.limits()
	hN, hB := s.headroom()
	return len(s.index)-s.released+1 > maxN-hN || s.bytes-s.releasedBytes+size > maxB-hB
}

// admitClient decides whether client may acquire one more entry of size
// bytes (a new key when newKey; a key it takes over or claims again after
// a release is never refused): it returns the refusal of a client past its
// bound under contention, or whether the acquisition counts against the
// bound (see countClient).
func (s *Store) admitClient(client string, size int64, newKey bool, now int64) (count bool, refusal error) {
	keys, _ := s.clientBound()
	if keys == 0 || !newKey || !s.contended(size) {
		return false, nil
	}
	s.pruneWindows(now)
	if c, ok := s.clients[client]; ok && c.n >= keys {
		return false, &keystore.FullError{Client: true, RetryAfter: max(time.Duration(c.end-now), time.Millisecond)}
	}
	return true, nil
}

// countClient counts a new key of client under contention, starting its
// window if it has none running. admitClient has pruned the windows that
// ended. The store keeps the counts of at most MaxEntries clients: past
// that, it forgets the window that ends first, which only ever admits a
// key that the count would have refused.
func (s *Store) countClient(client string, now int64) {
	if c, ok := s.clients[client]; ok {
		c.n++
		s.clients[client] = c
		return
	}
	if s.clients == nil {
		s.clients = make(map[string]tally)
	}
	if maxN, _ := s.limits(); len(s.clients) >= maxN {
		s.popWindow()
	}
	_, window := s.clientBound()
	end := now + int64(window)
	s.clients[client] = tally{n: 1, end: end}
	s.windows = append(s.windows, clientWindow{client: client, end: end})
}

// pruneWindows forgets the counts whose window ended by now.
func (s *Store) pruneWindows(now int64) {
	for len(s.windows) > 0 && s.windows[0].end <= now {
		s.popWindow()
	}
}

// popWindow forgets the count whose window ends first.
func (s *Store) popWindow() {
	w := s.windows[0]
	if c, ok := s.clients[w.client]; ok && c.end == w.end {
		delete(s.clients, w.client)
	}
	s.windows[0] = clientWindow{}
	s.windows = s.windows[1:]
	if len(s.windows) == 0 {
		s.windows = nil // the next window starts a new queue, dropping this one's array
	}
}
