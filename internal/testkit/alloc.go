// This file measures the bytes one call allocates, cold and warm,
// from runtime.MemStats.TotalAlloc (the total allocated, which bounds the
// peak heap the call can add). It is the one measurement behind bench
// section 6's allocation columns and geojson's
// TestHostileAllocationPerByte, so that the test holds the bound on the
// figure the report shows.

package testkit

import "runtime"

// WarmCalls is how many calls the warm figure is the least of.
const WarmCalls = 8

// Bytes returns the bytes one call of fn allocates: cold, one call after
// a first call (which does any one-time setup) and two collections (which
// empty every sync.Pool), and warm, the least of that call and WarmCalls
// calls after it, when the pools are full. It stops at the first error fn
// returns.
//
// The least, not the mean: under the race detector sync.Pool drops a
// random quarter of what it is given, and a collection during a call may
// empty a pool, so a single warm call can pay for buffers a warm pool
// would have held.
func AllocBytes(fn func() error) (cold, warm uint64, err error) {
	if err := fn(); err != nil {
		return 0, 0, err
	}
	call := func() (uint64, error) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		err := fn()
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc, err
	}
	runtime.GC()
	runtime.GC()
	if cold, err = call(); err != nil {
		return 0, 0, err
	}
	warm = cold
	for range WarmCalls {
		a, err := call()
		if err != nil {
			return 0, 0, err
		}
		warm = min(warm, a)
	}
	return cold, warm, nil
}
