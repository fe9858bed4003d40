package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/storeroom"
	"github.com/geoidem/geoidem/keystore"
)

// A Store with Config.MaxMemory samples the server's memory, at most once
// every roomPoll, started by the first Claim that finds the last sample
// older (in the background: no Claim waits for it), and, when it finds
// the memory at or above the bound, also the earliest expiry among a
// sample of the store's own keys (roomSampleKeys of them, found by SCAN,
// their PTTLs read in one pipeline per node): what a refusal's RetryAfter
// says. Between samples it adds up the records it completes (and
// entryOverhead for each): when those take the last sample past the
// bound, the next Claim samples again at once, so that one process does
// not run past the bound by a second of its own writes. A Claim reads a
// few atomics (storeroom.Room).
const (
	roomPoll          = time.Second
	roomSampleTimeout = time.Second
	roomSampleKeys    = 100
	roomScanCount     = 1000
	roomScanRounds    = 8
	entryOverhead     = 128 // bytes Redis takes for a key beside its name and value, about
)

// room is Config.MaxMemory's state.
type room struct {
	storeroom.Room
	max   int64        // Config.MaxMemory; 0: no bound
	used  atomic.Int64 // used_memory at the last sample
	added atomic.Int64 // bytes of the records completed since
}

// initRoom sets the room up for a bound of max bytes, and takes the first
// sample.
func (s *Store) initRoom(max int64) {
	r := &s.room
	r.max, r.Every, r.Timeout, r.Sample = max, roomPoll, roomSampleTimeout, s.sampleRoom
	r.SampleNow(context.Background())
}

// full returns the refusal of a Claim of a new key while the memory is at
// or above Config.MaxMemory, nil otherwise.
func (s *Store) full() *keystore.FullError { return s.room.Full() }

// sampleRoom reads the server's memory and, at or above the bound, when
// the store's earliest key expires.
func (s *Store) sampleRoom(ctx context.Context) (bool, time.Duration, error) {
	r := &s.room
	added := r.added.Swap(0) // what is added from now on may be in the sample too: counted twice, on the strict side
	used, err := forEachMaster(ctx, s.client, usedMemory, func(a, b int64) int64 { return max(a, b) })
	if err != nil {
		r.added.Add(added)
		return false, 0, err
	}
	r.used.Store(used)
	if used < r.max {
		return false, 0, nil
	}
	next, err := forEachMaster(ctx, s.client, s.earliestExpiry, func(a, b int64) int64 {
		switch {
		case a <= 0:
			return b
		case b <= 0:
			return a
		}
		return min(a, b)
	})
	if err != nil || next <= 0 {
		next = int64(roomPoll) // not one of its keys sampled: the next sample
	}
	return true, time.Duration(next), nil
}

// forEachMaster runs f on every master the client writes to (itself, for
// a *redis.Client) and folds the results with fold.
func forEachMaster(ctx context.Context, c redis.UniversalClient, f func(context.Context, redis.Cmdable) (int64, error), fold func(a, b int64) int64) (int64, error) {
	var (
		mu    sync.Mutex
		total int64
		seen  bool
	)
	each := func(ctx context.Context, n *redis.Client) error {
		v, err := f(ctx, n)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen {
			total, seen = v, true
		} else {
			total = fold(total, v)
		}
		return nil
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, each)
	case *redis.Ring:
		err = c.ForEachShard(ctx, each)
	default:
		return f(ctx, c)
	}
	return total, err
}

// usedMemory reads used_memory from INFO memory.
func usedMemory(ctx context.Context, c redis.Cmdable) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errNoUsedMemory
}

var errNoUsedMemory = errors.New("redisstore: INFO memory has no used_memory")

// earliestExpiry returns the nanoseconds until the earliest expiry among
// up to roomSampleKeys of the store's keys on one node, found by a few
// rounds of SCAN; 0 when it found none.
func (s *Store) earliestExpiry(ctx context.Context, c redis.Cmdable) (int64, error) {
	match := globEscape(s.prefix) + "*"
	var (
		keys   []string
		cursor uint64
	)
	for range roomScanRounds {
		page, next, err := c.Scan(ctx, cursor, match, roomScanCount).Result()
		if err != nil {
			return 0, err
		}
		keys = append(keys, page...)
		cursor = next
		if cursor == 0 || len(keys) >= roomSampleKeys {
			break
		}
	}
	if len(keys) > roomSampleKeys {
		keys = keys[:roomSampleKeys]
	}
	if len(keys) == 0 {
		return 0, nil
	}
	pipe := c.Pipeline()
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		ttls[i] = pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return 0, err
	}
	var next time.Duration
	for _, t := range ttls {
		if d, err := t.Result(); err == nil && d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return int64(next), nil
}

// completed adds a record of n bytes under key to what the Store has
// written since the last sample, and asks for a sample at the next Claim
// when that takes the last one past the bound.
func (r *room) completed(key string, n int) {
	if r.max > 0 && r.used.Load()+r.added.Add(int64(len(key)+n+entryOverhead)) >= r.max {
		r.Soon()
	}
}
