package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
)

// check verifies the store's internal invariants: both heaps are ordered,
// every entry's pos points back at its own heap slot, the index and the
// heaps hold exactly the live slots, and bytes add up.
func (s *Store) check(t *testing.T) {
	t.Helper()
	seen := map[int32]bool{}
	for name, h := range map[string]*slotHeap{"leases": &s.leases, "records": &s.records, "releases": &s.releases} {
		for i, slot := range h.slots {
			e := s.entry(slot)
			if int(e.pos) != i {
				t.Fatalf("%s[%d] = slot %d whose pos is %d", name, i, slot, e.pos)
			}
			if s.heap(e) != h {
				t.Fatalf("slot %d (state %d) is in the %s heap", slot, e.state, name)
			}
			if i > 0 && h.less(i, (i-1)/2) {
				t.Fatalf("%s heap order broken at %d", name, i)
			}
			if seen[slot] {
				t.Fatalf("slot %d is in a heap twice", slot)
			}
			seen[slot] = true
		}
	}
	if len(s.ages.slots) != len(s.records.slots) {
		t.Fatalf("%d records by age, %d by retention", len(s.ages.slots), len(s.records.slots))
	}
	for i, slot := range s.ages.slots {
		if e := s.entry(slot); int(e.agePos) != i || e.state != completed {
			t.Fatalf("ages[%d] = slot %d (state %d) whose agePos is %d", i, slot, e.state, e.agePos)
		}
		if i > 0 && s.ages.less(i, (i-1)/2) {
			t.Fatalf("ages heap order broken at %d", i)
		}
	}
	var bytes, releasedBytes int64
	nReleased := 0
	for id, slot := range s.index {
		if s.entry(slot).id != id || !seen[slot] {
			t.Fatalf("index[%x] = %d, which holds %x (in a heap: %v)", id[:4], slot, s.entry(slot).id[:4], seen[slot])
		}
		bytes += s.entry(slot).size
		if e := s.entry(slot); e.state == released {
			nReleased++
			releasedBytes += e.size
		}
	}
	// Each client counted has one window in the queue, with its end, and
	// the queue is in the order the windows end.
	if len(s.windows) != len(s.clients) {
		t.Fatalf("%d windows queued for %d clients counted", len(s.windows), len(s.clients))
	}
	for i, w := range s.windows {
		if c, ok := s.clients[w.client]; !ok || c.end != w.end || (i > 0 && w.end < s.windows[i-1].end) {
			t.Fatalf("windows[%d] = %+v: the client's count %+v (counted: %v)", i, w, c, ok)
		}
	}
	if releasedBytes != s.releasedBytes {
		t.Fatalf("%d bytes of released entries, %d counted", releasedBytes, s.releasedBytes)
	}
	if len(seen) != len(s.index) || bytes != s.bytes {
		t.Fatalf("%d slots in heaps, %d indexed, %d bytes counted, %d recorded", len(seen), len(s.index), bytes, s.bytes)
	}
	if nReleased != s.released {
		t.Fatalf("%d released entries, %d counted", nReleased, s.released)
	}
	// Every slot the pages hold is live or free, and a free one is empty.
	if len(seen)+len(s.free) != int(s.slots) || len(s.entries) != int(s.slots+pageSize-1)/pageSize || len(s.recs) != len(s.entries) {
		t.Fatalf("%d live and %d free slots, %d made, in %d and %d pages", len(seen), len(s.free), s.slots, len(s.entries), len(s.recs))
	}
	for _, slot := range s.free {
		if seen[slot] || *s.entry(slot) != (entry{}) || *s.rec(slot) != nil {
			t.Fatalf("free slot %d is live (%v) or not empty: %+v", slot, seen[slot], *s.entry(slot))
		}
	}
}

// TestPagesKeepInvariants fills several pages of entries, empties some
// slots and fills them again.
func TestPagesKeepInvariants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{MaxEntries: 16 * pageSize, MaxBytes: 1 << 30, ReserveBytes: 1})
		ctx := context.Background()
		tokens := map[string]keystore.Token{}
		for round := range 3 {
			for i := range 3*pageSize + 7 {
				key := fmt.Sprint("key-", round, "-", i)
				c, err := testkit.Claim(ctx, s, key, keystore.Fingerprint{}, time.Minute)
				if err != nil || !c.Acquired {
					t.Fatalf("Claim(%s): %v, %v", key, c.State, err)
				}
				tokens[key] = c.Token
			}
			s.check(t)
			for key, tok := range tokens {
				var err error
				if len(key)%2 == 0 {
					err = s.Complete(ctx, key, tok, record.Append(nil, record.Record{StatusCode: 200, Body: []byte(key)}), time.Nanosecond)
				} else {
					err = s.Complete(ctx, key, tok, record.Append(nil, record.Record{StatusCode: 201, Body: []byte(key)}), time.Hour)
				}
				if err != nil {
					t.Fatalf("Complete(%s): %v", key, err)
				}
				if len(key)%2 == 0 {
					continue
				}
				if c, _ := testkit.Claim(ctx, s, key, keystore.Fingerprint{}, time.Minute); string(testkit.Decoded(c.Record).Body) != key {
					t.Fatalf("Claim(%s) after Complete: %v %q", key, c.State, testkit.Decoded(c.Record).Body)
				}
			}
			clear(tokens)
			time.Sleep(time.Millisecond) // the short retentions end (synctest's clock)
			s.dropExpired(s.now())
			s.check(t)
			for _, slot := range s.index {
				if e := s.entry(slot); e.state == completed && string(*s.rec(slot)) == "" {
					t.Fatalf("slot %d: completed without its record", slot)
				}
			}
		}
	})
}

func TestRandomOperationsKeepInvariants(t *testing.T) {
	for _, cfg := range []Config{
		{MaxEntries: 40, MaxBytes: 40 << 10},
		{MaxEntries: 40, MaxBytes: 40 << 10, ClientKeys: 3, ClientWindow: 300 * time.Microsecond, EvictAfter: 200 * time.Microsecond},
	} {
		s := New(cfg)
		randomOperations(t, s, cfg.EvictAfter > 0)
		if st := s.Stats(); cfg.EvictAfter > 0 && st.Evicted == 0 {
			t.Fatalf("%+v: no eviction in %+v", cfg, st)
		}
	}
}

// randomOperations runs random calls on s, for random clients, checking
// its invariants as it goes; with long, records are kept for an hour.
func randomOperations(t *testing.T, s *Store, long bool) {
	rng := rand.New(rand.NewPCG(7, 9))
	ctx := context.Background()
	tokens := map[string]keystore.Token{}
	for i := range 20000 {
		key := fmt.Sprint("k", rng.IntN(60))
		d := time.Duration(1+rng.IntN(1000)) * time.Microsecond
		switch rng.IntN(4) {
		case 0:
			tok := keystore.NewToken()
			a := keystore.ClaimArgs{Lease: d, Token: tok, Client: []string{"", "a", "b"}[rng.IntN(3)]}
			if c, err := s.Claim(ctx, key, a); err == nil && c.Acquired {
				tokens[key] = tok
			}
		case 1:
			_, _ = s.Extend(ctx, key, tokens[key], d)
		case 2:
			retention := d
			if long {
				retention = time.Hour
			}
			_ = s.Complete(ctx, key, tokens[key], record.Append(nil, record.Record{StatusCode: 200, Body: make([]byte, rng.IntN(2000))}), retention)
		case 3:
			_ = s.Release(ctx, key, tokens[key])
		}
		if i%7 == 0 {
			s.check(t)
		}
	}
	s.check(t)
}
