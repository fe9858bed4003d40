package memstore

import (
	"runtime"
	"runtime/debug"

	"github.com/geoidem/geoidem/keystore"
)

// The defaults of Config's zero fields, for the tests of package
// memstore_test.
const (
	DefaultMaxBytes     = defaultMaxBytes
	DefaultReserveBytes = defaultReserveBytes
	DefaultClientKeys   = defaultClientKeys
	DefaultClientWindow = defaultClientWindow
)

// ReadLock holds s's lock shared, as a Claim of a live key does, until the
// returned function is called.
func ReadLock(s *Store) (unlock func()) {
	s.mu.RLock()
	return s.mu.RUnlock
}

// LockedMallocs claims each key as Claim does, completing none, and returns
// the allocations made while s.mu was held. The store's index is made
// first with room for every key (twice over, so that no table of the map
// fills): a Go map grows as it must, and only the rest of the store is
// under test.
func LockedMallocs(s *Store, keys []string, a func() keystore.ClaimArgs) (mallocs uint64, err error) {
	s.mu.Lock()
	s.init()
	s.index = make(map[keyID]int32, 2*len(keys))
	s.mu.Unlock()
	// Only the claims may allocate meanwhile: no collection runs, and no
	// other goroutine (the finalizers a collection leaves) runs in parallel.
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	for _, key := range keys {
		id, args := idOf(key), a()
		sp := s.prepare()
		s.mu.Lock()
		runtime.ReadMemStats(&before)
		s.install(sp)
		_, _, err = s.claim(id, int64(len(key)), args)
		runtime.ReadMemStats(&after)
		s.mu.Unlock()
		if err != nil {
			return 0, err
		}
		mallocs += after.Mallocs - before.Mallocs
	}
	return mallocs, nil
}
