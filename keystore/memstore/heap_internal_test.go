package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// check verifies the store's internal invariants: both heaps are ordered,
// every entry's pos points back at its own heap slot, the index and the
// heaps hold exactly the live slots, and bytes add up.
func (s *Store) check(t *testing.T) {
	t.Helper()
	seen := map[int32]bool{}
	for name, h := range map[string]*slotHeap{"leases": &s.leases, "records": &s.records} {
		for i, slot := range h.slots {
			e := &s.entries[slot]
			if int(e.pos) != i {
				t.Fatalf("%s[%d] = slot %d whose pos is %d", name, i, slot, e.pos)
			}
			if (name == "leases") != e.inLeaseHeap() {
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
	var bytes int64
	nReleased := 0
	for id, slot := range s.index {
		if s.entries[slot].id != id || !seen[slot] {
			t.Fatalf("index[%x] = %d, which holds %x (in a heap: %v)", id[:4], slot, s.entries[slot].id[:4], seen[slot])
		}
		bytes += s.entries[slot].size
		if s.entries[slot].state == released {
			nReleased++
		}
	}
	if len(seen) != len(s.index) || bytes != s.bytes {
		t.Fatalf("%d slots in heaps, %d indexed, %d bytes counted, %d recorded", len(seen), len(s.index), bytes, s.bytes)
	}
	if nReleased != s.released {
		t.Fatalf("%d released entries, %d counted", nReleased, s.released)
	}
}

func TestRandomOperationsKeepInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	s := New(Config{MaxEntries: 40, MaxBytes: 40 << 10})
	ctx := context.Background()
	tokens := map[string]keystore.Token{}
	for i := range 20000 {
		key := fmt.Sprint("k", rng.IntN(60))
		d := time.Duration(1+rng.IntN(1000)) * time.Microsecond
		switch rng.IntN(4) {
		case 0:
			if c, err := s.Claim(ctx, key, keystore.Fingerprint{}, d); err == nil && c.State == keystore.Acquired {
				tokens[key] = c.Token
			}
		case 1:
			_ = s.Extend(ctx, key, tokens[key], d)
		case 2:
			_ = s.Complete(ctx, key, tokens[key], keystore.Record{StatusCode: 200, Body: make([]byte, rng.IntN(2000))}, d)
		case 3:
			_ = s.Release(ctx, key, tokens[key])
		}
		if i%7 == 0 {
			s.check(t)
		}
	}
	s.check(t)
}
