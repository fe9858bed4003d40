package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
	"github.com/redis/go-redis/v9"
)

var _ adminhttp.Admin = (*Store)(nil)

// The adminhttp.Admin methods read and change one key's entry in one script
// (its value and its PTTL together),
// and Summarize scans every master for the store's prefix.

// inspectScript: KEYS[1] the key. Returns {value or ”, PTTL}.
var inspectScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
return {v or '', redis.call('PTTL', KEYS[1])}
`)

// freeScript: KEYS[1] the key; ARGV[1] grace (ms), ARGV[2] '1' to free a
// running lease. Returns {outcome, value or ”, PTTL}: outcome 0 not in
// flight, 1 in flight with its lease running (nothing done), 2 freed.
var freeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
local p = redis.call('PTTL', KEYS[1])
if not v or string.sub(v, 1, 1) ~= 'i' then
  return {0, v or '', p}
end
if p > tonumber(ARGV[1]) and ARGV[2] ~= '1' then
  return {1, v, p}
end
redis.call('DEL', KEYS[1])
return {2, v, p}
`)

// forgetScript: KEYS[1] the key. Returns {outcome, value or ”, PTTL}:
// outcome 0 not completed, 1 deleted.
var forgetScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
local p = redis.call('PTTL', KEYS[1])
local st = v and string.sub(v, 1, 1)
if st ~= 'd' and st ~= 'c' then
  return {0, v or '', p}
end
redis.call('DEL', KEYS[1])
return {1, v, p}
`)

// entryOf decodes a stored value and its PTTL (ms). A released entry that
// names no releaser (only fenced tokens) is absent.
func entryOf(v string, pttl int64) (adminhttp.Entry, error) {
	grace := abandonedGrace.Milliseconds()
	switch {
	case v == "":
		return adminhttp.Entry{}, nil
	case v[0] == 'r' && len(v) >= 9 && (len(v)-9)%8 == 0:
		if tok := keystore.Token(binary.BigEndian.Uint64([]byte(v[1:9]))); tok != 0 {
			return adminhttp.Entry{State: keystore.Released, Token: tok}, nil
		}
		return adminhttp.Entry{}, nil
	case v[0] == 'i' && len(v) == 41:
		left := time.Duration(pttl-grace) * time.Millisecond
		e := adminhttp.Entry{State: keystore.InFlight, Token: keystore.Token(binary.BigEndian.Uint64([]byte(v[33:41]))), LeaseRemaining: left, LeaseRunOut: left <= 0}
		copy(e.Fingerprint[:], v[1:33])
		return e, nil
	case (v[0] == 'd' && len(v) >= 41) || (v[0] == 'c' && len(v) >= 33):
		e := adminhttp.Entry{State: keystore.Completed, RetentionRemaining: time.Duration(pttl) * time.Millisecond}
		copy(e.Fingerprint[:], v[1:33])
		rec := v[33:]
		if v[0] == 'd' {
			e.Token = keystore.Token(binary.BigEndian.Uint64([]byte(v[33:41])))
			rec = v[41:]
		}
		e.Record = []byte(rec)
		return e, nil
	}
	return adminhttp.Entry{}, errors.New("redisstore: the key holds a value that is not an idempotency entry")
}

// adminReply reads a script's {a, value, b} reply.
func adminReply(res any) (n int64, v string, p int64, ok bool) {
	arr, ok := res.([]any)
	if !ok || len(arr) != 3 {
		return 0, "", 0, false
	}
	n, ok1 := arr[0].(int64)
	v, ok2 := arr[1].(string)
	p, ok3 := arr[2].(int64)
	return n, v, p, ok1 && ok2 && ok3
}

// Inspect implements adminhttp.Admin.
func (s *Store) Inspect(ctx context.Context, key string) (adminhttp.Entry, error) {
	res, err := inspectScript.Run(ctx, s.client, []string{s.RedisKey(key)}).Result()
	if err != nil {
		return adminhttp.Entry{}, opError(ctx, "inspect", err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr) != 2 {
		return adminhttp.Entry{}, fmt.Errorf("redisstore: inspect: unexpected reply %v", res)
	}
	v, _ := arr[0].(string)
	p, _ := arr[1].(int64)
	return entryOf(v, p)
}

// Free implements adminhttp.Admin.
func (s *Store) Free(ctx context.Context, key string, force bool) (adminhttp.Entry, error) {
	f := "0"
	if force {
		f = "1"
	}
	res, err := freeScript.Run(ctx, s.client, []string{s.RedisKey(key)}, abandonedGrace.Milliseconds(), f).Result()
	if err != nil {
		return adminhttp.Entry{}, opError(ctx, "free", err)
	}
	n, v, p, ok := adminReply(res)
	if !ok {
		return adminhttp.Entry{}, fmt.Errorf("redisstore: free: unexpected reply %v", res)
	}
	e, err := entryOf(v, p)
	switch {
	case err != nil:
		return e, err
	case n == 0:
		return e, adminhttp.ErrNotInFlight
	case n == 1:
		return e, adminhttp.ErrLeaseRunning
	}
	return e, nil
}

// Forget implements adminhttp.Admin.
func (s *Store) Forget(ctx context.Context, key string) (adminhttp.Entry, error) {
	res, err := forgetScript.Run(ctx, s.client, []string{s.RedisKey(key)}).Result()
	if err != nil {
		return adminhttp.Entry{}, opError(ctx, "forget", err)
	}
	n, v, p, ok := adminReply(res)
	if !ok {
		return adminhttp.Entry{}, fmt.Errorf("redisstore: forget: unexpected reply %v", res)
	}
	e, err := entryOf(v, p)
	if err == nil && n == 0 {
		err = adminhttp.ErrNotCompleted
	}
	return e, err
}

// Summarize implements adminhttp.Admin: it SCANs every master (of a
// Cluster, or the shards of a Ring) for the store's prefix, reading each
// entry's value and PTTL, so it costs a round trip per hundred keys. The
// counts are not a snapshot: entries claimed, completed or expired while it
// scans may be counted or not. Bytes are the bytes of the stored values.
func (s *Store) Summarize(ctx context.Context) (adminhttp.Summary, error) {
	var sum adminhttp.Summary
	scan := func(ctx context.Context, c *redis.Client) error {
		pattern := globEscape(s.prefix) + "{*"
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 100).Result()
			if err != nil {
				return err
			}
			var live []string
			for _, k := range keys {
				if !strings.HasSuffix(k, "}") { // a fence set, or an earlier version's release mark
					continue
				}
				live = append(live, k)
			}
			if len(live) > 0 {
				pipe := c.Pipeline()
				gets := make([]*redis.StringCmd, len(live))
				ttls := make([]*redis.DurationCmd, len(live))
				for i, k := range live {
					gets[i] = pipe.Get(ctx, k)
					ttls[i] = pipe.PTTL(ctx, k)
				}
				if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				for i, k := range live {
					v, err := gets[i].Result()
					if errors.Is(err, redis.Nil) {
						continue // gone since the SCAN
					}
					if err != nil {
						return err
					}
					e, err := entryOf(v, ttls[i].Val().Milliseconds())
					if err != nil {
						continue // not ours
					}
					sum.Add(strings.TrimSuffix(strings.TrimPrefix(k, s.prefix+"{"), "}"), e, int64(len(v)))
				}
			}
			cursor = next
			if cursor == 0 {
				return nil
			}
		}
	}
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex // ForEachMaster scans the nodes concurrently, into one Summary
		err = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, node)
		})
	case *redis.Ring:
		var mu sync.Mutex
		err = c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, node)
		})
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return sum, fmt.Errorf("redisstore: summarize needs a *redis.Client, *redis.ClusterClient or *redis.Ring, not %T", s.client)
	}
	if err != nil {
		return adminhttp.Summary{}, opError(ctx, "summarize", err)
	}
	return sum, nil
}

// globEscape escapes the glob characters of SCAN's MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
