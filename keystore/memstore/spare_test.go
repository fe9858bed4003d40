package memstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// A Claim of a new key holds the lock every request takes, so it must not
// allocate under it: the pages a growing store adds, and the larger arrays
// of its heaps, were allocated there, and at 64 clients over loopback HTTP
// the lock, held about a microsecond, was held up to milliseconds at each
// page (the allocation and the collection work it was charged). They are
// now prepared before the lock. The claims here cross many pages and
// several doublings of the arrays.
func TestClaimDoesNotAllocateUnderTheLock(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 1 << 20, MaxBytes: 1 << 40})
	keys := make([]string, 20*256+7)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	args := func() keystore.ClaimArgs {
		return keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: keystore.NewToken()}
	}
	mallocs, err := memstore.LockedMallocs(s, keys, args)
	if err != nil {
		t.Fatal(err)
	}
	if mallocs != 0 {
		t.Errorf("%d claims of new keys allocated %d times under the lock, want none", len(keys), mallocs)
	}
	if got := s.Stats().Entries; got != len(keys) {
		t.Errorf("Stats().Entries = %d, want %d", got, len(keys))
	}
}
