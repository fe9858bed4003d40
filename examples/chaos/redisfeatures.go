package main

import (
	"context"
	"net/url"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// redisCounts reads the counters examples/ingest's Redis feature store
// keeps beside each feature (the hash at prefix + "{features}:" + id):
// upserts, the runs whose write took the feature (stale or not: a run's
// effect), and writes, those that replaced it. They are written in the
// MULTI of the feature's write, so a receiver killed after it cannot leave
// an effect uncounted. storeURL is one Redis or a Cluster's node list;
// every prefix is read and the counts summed.
func redisCounts(ctx context.Context, storeURL string, prefixes []string) (upserts, writes map[string]int, err error) {
	upserts, writes = map[string]int{}, map[string]int{}
	var mu sync.Mutex
	read := func(ctx context.Context, c redis.Cmdable) error {
		for _, prefix := range prefixes {
			head := prefix + "{features}:"
			iter := c.Scan(ctx, 0, escapeGlob(head)+"*", 500).Iterator()
			for iter.Next(ctx) {
				key := iter.Val()
				v, err := c.HMGet(ctx, key, "upserts", "writes").Result()
				if err != nil {
					return err
				}
				id := strings.TrimPrefix(key, head)
				mu.Lock()
				upserts[id] += atoi(v[0])
				writes[id] += atoi(v[1])
				mu.Unlock()
			}
			if err := iter.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	u, err := url.Parse(storeURL)
	if err != nil {
		return nil, nil, err
	}
	if strings.Contains(u.Host, ",") {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(u.Host, ",")})
		defer c.Close()
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return read(ctx, m) })
	} else {
		opts, perr := redis.ParseURL(storeURL)
		if perr != nil {
			return nil, nil, perr
		}
		c := redis.NewClient(opts)
		defer c.Close()
		err = read(ctx, c)
	}
	if err != nil {
		return nil, nil, err
	}
	// A feature that no run replaced is not stored (writes 0): leave it out
	// of writes, as the other stores' counts do.
	for id, n := range writes {
		if n == 0 {
			delete(writes, id)
		}
	}
	return upserts, writes, nil
}

// atoi reads an HMGET value: a counter's decimal text, or nil for none.
func atoi(v any) int {
	s, _ := v.(string)
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// escapeGlob escapes the characters SCAN's MATCH pattern gives a meaning.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
