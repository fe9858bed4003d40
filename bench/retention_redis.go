package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// retentionRedis fills a private server of program (redis-server or
// valkey-server, without persistence) and measures its memory per key and
// the store's latency there, against a second, empty private server.
func retentionRedis(ctx context.Context, s *section, program string) error {
	o := s.o
	var servers [2]*testkit.RedisServer
	var clients [2]*redis.Client
	for i := range servers {
		srv, err := testkit.StartRedis(ctx, testkit.RedisOptions{Program: program})
		if err != nil {
			return err
		}
		defer srv.Stop()
		servers[i] = srv
		clients[i] = redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		defer clients[i].Close()
	}
	full := clients[0]
	name, err := redisVersion(ctx, full)
	if err != nil {
		return err
	}
	var stores [2]*redisstore.Store
	for i, c := range clients {
		if stores[i], err = redisstore.New(c, redisstore.Config{Durability: redisstore.AcceptVolatile}); err != nil {
			return err
		}
	}
	before, err := usedMemory(ctx, full)
	if err != nil {
		return err
	}
	keys := o.retentionKeys
	id := randomHex(6)
	o.logf("retention: filling %s with %s keys", name, commas(int64(keys)))
	t0 := time.Now()
	valueLen, err := redisFill(ctx, full, stores[0], id, keys)
	if err != nil {
		return err
	}
	fillTime := time.Since(t0)
	after, err := usedMemory(ctx, full)
	if err != nil {
		return err
	}
	n, err := full.DBSize(ctx).Result()
	if err != nil {
		return err
	}
	if n != int64(keys) {
		return fmt.Errorf("%s holds %d keys after the fill, want %d", name, n, keys)
	}
	per := float64(after-before) / float64(keys)

	calls := max(1, o.retentionCalls/retentionRounds)
	lf, le := &latencies{}, &latencies{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range retentionRounds {
		if err := measureLatency(ctx, stores[0], id+"f", calls, func(int) string { return retentionKey(id, rng.IntN(keys)) }, lf); err != nil {
			return err
		}
		if err := measureLatency(ctx, stores[1], id+"e", calls, func(i int) string { return retentionKey(id+"enew", i) }, le); err != nil {
			return err
		}
	}

	s.line("### %s: memory and latency", name)
	s.line("")
	s.line("A private `%s` (no persistence, no maxmemory), filled by pipelined SETs of redisstore's completed values (`'d'`, fingerprint, token, record: %d bytes) "+
		"under its keys (`geoidem:{key}`, 72 bytes), each with its retention as a PX expiry: %s keys in %s. "+
		"Memory is `used_memory` after the fill less before it. Expiry costs Redis no statement: a key is deleted when it is read after its expiry or when the server's "+
		"active expiry cycle samples it; until then it keeps its memory.",
		program, valueLen, commas(int64(keys)), fmtDur(fillTime))
	s.line("")
	s.table([]string{"server", "keys", "used_memory growth", "per key", fmt.Sprintf("projected at %s keys", commas(retentionKeysAtRate))},
		[][]string{{name, commas(int64(keys)), mib(after - before), fmt.Sprintf("%.0f B", per), gib(per * float64(retentionKeysAtRate))}})
	s.table([]string{"store and size", "call", "calls", "p50", "p99"},
		latencyRows("redisstore on "+name, []string{commas(int64(keys)) + " keys", "empty"}, []*latencies{lf, le}))
	s.headline(fmt.Sprintf("redisstore on %s at %s keys: used_memory per key", name, commas(int64(keys))), "%.0f B; %s at %s keys", per, gib(per*float64(retentionKeysAtRate)), commas(retentionKeysAtRate))
	return nil
}

// redisVersion names the server: "Redis 7.0.15" or "Valkey 8.0.1".
func redisVersion(ctx context.Context, c *redis.Client) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	f := infoFields(info)
	if f["server_name"] == "valkey" {
		return "Valkey " + f["valkey_version"], nil
	}
	return "Redis " + f["redis_version"], nil
}

func infoFields(info string) map[string]string {
	f := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	return f
}

func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(infoFields(info)["used_memory"], 10, 64)
}

// redisFill SETs keys completed values in redisstore's format under st's
// Redis keys, in pipelines, their retention ending evenly over the next
// 24 h; it returns the length of a value.
func redisFill(ctx context.Context, c *redis.Client, st *redisstore.Store, run string, keys int) (int, error) {
	rec := record.Append(nil, retentionRecord)
	const batch = 1000
	value := make([]byte, 0, 41+len(rec))
	for i := 0; i < keys; i += batch {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := i; j < min(i+batch, keys); j++ {
				key := retentionKey(run, j)
				fp := sha256.Sum256([]byte(key))
				// redisstore's completed entry: 'd' | fingerprint |
				// token (8 bytes, big endian) | record.
				value = append(append(append(value[:0], 'd'), fp[:]...), make([]byte, 8)...)
				binary.BigEndian.PutUint64(value[33:41], uint64(keystore.NewToken()))
				value = append(value, rec...)
				ttl := retentionLiveFrom + time.Duration(float64(retentionDay-retentionLiveFrom)*float64(j)/float64(keys))
				p.Set(ctx, st.RedisKey(key), string(value), ttl)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return 41 + len(rec), nil
}
