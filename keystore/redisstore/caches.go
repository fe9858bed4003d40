// The Store's two per-process caches: boxed lease arguments, and the
// fingerprint and Redis key of each claim in flight.

package redisstore

import (
	"sync"
	"sync/atomic"

	"github.com/geoidem/geoidem/keystore"
)

// boxCache keeps the last millisecond count it boxed as a command
// argument: the middleware passes the same lease and retention to every
// call, and boxing an int64 above 255 allocates.
type boxCache struct{ p atomic.Pointer[boxed] }

type boxed struct {
	ms int64
	v  any
}

func (c *boxCache) get(ms int64) any {
	if b := c.p.Load(); b != nil && b.ms == ms {
		return b.v
	}
	b := &boxed{ms: ms, v: ms}
	c.p.Store(b)
	return b.v
}

// fpCache remembers the fingerprints of the claims a Store acquired and has
// not yet completed or released, so that Complete can send the whole
// in-flight and completed values and run completeOwnScript. A Complete that
// finds no fingerprint (the claim was made by another Store or process, or
// the cache was cleared) runs completeScript, which reads the fingerprint
// from Redis: the cache saves Redis work, it never decides an outcome. It
// keeps the claim's Redis key too (when the claim had it), so that the
// Complete or Release need not build it again.
type fpCache struct {
	mu sync.Mutex
	m  map[fpKey]fpEntry
}

type fpKey struct {
	key   string
	token keystore.Token
}

type fpEntry struct {
	fp   keystore.Fingerprint
	rkey string // Store.RedisKey(key), or empty
}

// fpCacheMax bounds the fingerprints a Store remembers. Claims that are
// never completed nor released (their handler's process lost the lease and
// gave up) would otherwise accumulate; at the bound the cache is cleared,
// and the claims it held complete through completeScript.
const fpCacheMax = 1 << 14

// put remembers fp, the fingerprint of key's claim by token, and rkey,
// key's Redis key (or "" when the claim did not build it).
func (c *fpCache) put(key string, token keystore.Token, fp keystore.Fingerprint, rkey string) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= fpCacheMax {
		c.m = make(map[fpKey]fpEntry)
	}
	c.m[fpKey{key, token}] = fpEntry{fp, rkey}
	c.mu.Unlock()
}

// take returns and forgets what put remembered of key's claim by token.
func (c *fpCache) take(key string, token keystore.Token) (fpEntry, bool) {
	c.mu.Lock()
	e, ok := c.m[fpKey{key, token}]
	if ok {
		delete(c.m, fpKey{key, token})
	}
	c.mu.Unlock()
	return e, ok
}

var (
	_ keystore.Store  = (*Store)(nil)
	_ keystore.Pinger = (*Store)(nil)
)
