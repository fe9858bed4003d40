package redisstore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// Run both in one go to compare the store with the bare commands it
// replaces:
//
//	go test -run '^$' -bench 'Store$|StoreClientBound|StoreRESP2|StoreCluster|BareSetNX|Concurrent64|HTTP64' -benchmem ./keystore/redisstore/

func BenchmarkStore(b *testing.B) {
	client := standaloneClient(b)
	keystoretest.RunBenchmarks(b, func(b *testing.B) keystore.Store {
		return newStore(b, client, client, redisstore.Config{})
	})
}

// BenchmarkStoreClientBound is BenchmarkStore with a bound on each
// client's new keys (never reached): FirstCallClient and ReplayClient
// count, the others claim without a client.
func BenchmarkStoreClientBound(b *testing.B) {
	client := standaloneClient(b)
	keystoretest.RunBenchmarks(b, func(b *testing.B) keystore.Store {
		return newStore(b, client, client, redisstore.Config{ClientKeys: 1 << 30})
	})
}

// BenchmarkStoreRESP2 is BenchmarkStoreClientBound on a client that
// speaks RESP2, where go-redis does not look for push notifications
// around each command.
func BenchmarkStoreRESP2(b *testing.B) {
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr, Protocol: 2})
	b.Cleanup(func() { client.Close() })
	ping(b, client, standaloneAddr)
	keystoretest.RunBenchmarks(b, func(b *testing.B) keystore.Store {
		return newStore(b, client, client, redisstore.Config{ClientKeys: 1 << 30})
	})
}

func BenchmarkStoreCluster(b *testing.B) {
	client := clusterClient(b)
	keystoretest.RunBenchmarks(b, func(b *testing.B) keystore.Store {
		return newStore(b, client, client, redisstore.Config{})
	})
}

// benchRecord is the record keystoretest.RunBenchmarks stores.
var benchRecord = record.Record{
	StatusCode: 201,
	Header:     map[string][]string{"Content-Type": {"application/json"}},
	Body:       []byte(`{"stored":["feature-1"]}`),
}

// bareValues returns values the size of the store's own: an in-flight
// entry (status, fingerprint, token) and a completed one
// (status, fingerprint, encoded record).
func bareValues() (inFlight, completed []byte) {
	inFlight = bytes.Repeat([]byte{'i'}, 1+32+8)
	// status (2) + field count (1) + name (1+12) + value count (1) + value (1+16) + body
	completed = bytes.Repeat([]byte{'c'}, 1+32+2+1+13+1+17+len(benchRecord.Body))
	return inFlight, completed
}

// BenchmarkBareSetNX does by hand, with single commands, what the store's
// scripts do: SET NX PX to claim, SET PX to record, GET to replay, DEL to
// release; no fencing, no takeover, no fingerprint check.
func BenchmarkBareSetNX(b *testing.B) {
	client := standaloneClient(b)
	inFlight, completed := bareValues()
	b.Run("FirstCall", func(b *testing.B) {
		s := newStore(b, client, client, redisstore.Config{}) // for its prefix and cleanup
		ctx := b.Context()
		prefix := s.RedisKey(keystoretest.Key(b)[:48])
		n := 0
		for b.Loop() {
			n++
			bareFirstCall(ctx, b, client, prefix+strconv.Itoa(n), inFlight, completed)
		}
	})
	b.Run("FirstCallCounted", func(b *testing.B) {
		// A per-client count by hand: SET NX, INCR and PEXPIRE NX of the
		// client's counter in one pipeline, then SET.
		s := newStore(b, client, client, redisstore.Config{})
		ctx := b.Context()
		prefix := s.RedisKey(keystoretest.Key(b)[:48])
		counter := prefix + "client:bench"
		n := 0
		for b.Loop() {
			n++
			key := prefix + strconv.Itoa(n)
			var set *redis.BoolCmd
			if _, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
				set = p.SetNX(ctx, key, inFlight, time.Minute)
				p.Incr(ctx, counter)
				p.Do(ctx, "pexpire", counter, 3600000, "nx")
				return nil
			}); err != nil || !set.Val() {
				b.Fatalf("SET NX, INCR, PEXPIRE: %v %v", set.Val(), err)
			}
			if err := client.Set(ctx, key, completed, time.Hour).Err(); err != nil {
				b.Fatalf("SET: %v", err)
			}
		}
	})
	b.Run("Replay", func(b *testing.B) {
		s := newStore(b, client, client, redisstore.Config{})
		ctx := b.Context()
		key := s.RedisKey(keystoretest.Key(b))
		bareFirstCall(ctx, b, client, key, inFlight, completed)
		for b.Loop() {
			if _, err := client.Get(ctx, key).Bytes(); err != nil {
				b.Fatalf("GET: %v", err)
			}
		}
	})
	b.Run("ReplayParallel", func(b *testing.B) {
		s := newStore(b, client, client, redisstore.Config{})
		ctx := b.Context()
		key := s.RedisKey(keystoretest.Key(b))
		bareFirstCall(ctx, b, client, key, inFlight, completed)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := client.Get(ctx, key).Bytes(); err != nil {
					b.Errorf("GET: %v", err)
					return
				}
			}
		})
	})
	b.Run("ClaimRelease", func(b *testing.B) {
		s := newStore(b, client, client, redisstore.Config{})
		ctx := b.Context()
		key := s.RedisKey(keystoretest.Key(b))
		for b.Loop() {
			if ok, err := client.SetNX(ctx, key, inFlight, time.Minute).Result(); err != nil || !ok {
				b.Fatalf("SET NX: %v %v", ok, err)
			}
			if err := client.Del(ctx, key).Err(); err != nil {
				b.Fatalf("DEL: %v", err)
			}
		}
	})
}

func bareFirstCall(ctx context.Context, b *testing.B, client redis.UniversalClient, key string, inFlight, completed []byte) {
	if ok, err := client.SetNX(ctx, key, inFlight, time.Minute).Result(); err != nil || !ok {
		b.Fatalf("SET NX: %v %v", ok, err)
	}
	if err := client.Set(ctx, key, completed, time.Hour).Err(); err != nil {
		b.Fatalf("SET: %v", err)
	}
}

// BenchmarkConcurrent64 runs first calls from 64 goroutines, through the
// store and by hand (SET NX, then SET), on one client with its default pool.
func BenchmarkConcurrent64(b *testing.B) {
	client := standaloneClient(b)
	inFlight, completed := bareValues()
	parallelism := max(1, 64/testingProcs())
	b.Run("BareSetNX/FirstCall", func(b *testing.B) {
		s := newStore(b, client, client, redisstore.Config{})
		ctx := b.Context()
		prefix := s.RedisKey(keystoretest.Key(b)[:48])
		var n atomic.Int64
		b.SetParallelism(parallelism)
		cpu := startCPU(b, client)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bareFirstCall(ctx, b, client, prefix+strconv.FormatInt(n.Add(1), 10), inFlight, completed)
			}
		})
		cpu.report(b)
	})
	for _, v := range []struct {
		name string
		cfg  redisstore.Config
	}{{"Store/FirstCall", redisstore.Config{}}, {"Store/FirstCall/NoAutoPipeline", redisstore.Config{NoAutoPipeline: true}}} {
		b.Run(v.name, func(b *testing.B) {
			s := newStore(b, client, client, v.cfg)
			ctx := b.Context()
			prefix := keystoretest.Key(b)[:48]
			var n atomic.Int64
			b.SetParallelism(parallelism)
			cpu := startCPU(b, client)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := prefix + strconv.FormatInt(n.Add(1), 10)
					c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
					if err != nil || !c.Acquired {
						b.Errorf("Claim: %v %v", c.State, err)
						return
					}
					if err := s.Complete(ctx, key, c.Token, encode(benchRecord), time.Hour); err != nil {
						b.Errorf("Complete: %v", err)
						return
					}
				}
			})
			cpu.report(b)
		})
	}
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkHTTP64 measures throughput over loopback HTTP with 64 concurrent
// clients, in one run: the bare handler; the bare handler doing the same two
// Redis round trips by hand (SET NX before, SET after: the inherent cost);
// and the handler wrapped with the middleware on redisstore, for first calls
// and for replays. All Redis variants share one go-redis client with its
// default options.
func BenchmarkHTTP64(b *testing.B) { benchHTTP(b, 64) }

// BenchmarkHTTP1 is BenchmarkHTTP64 with one client sending one request at
// a time.
func BenchmarkHTTP1(b *testing.B) { benchHTTP(b, 1) }

func benchHTTP(b *testing.B, clients int) {
	client := standaloneClient(b)
	inFlight, completed := bareValues()
	type variant struct {
		name    string
		handler func(b *testing.B) http.Handler
		key     func(n int64) string
	}
	newKey := func(n int64) string { return "key-" + strconv.FormatInt(n, 10) }
	wrapped := func(b *testing.B) http.Handler {
		return newMiddleware(b, newStore(b, client, client, redisstore.Config{}), middleware.Config{}).Handler(ingest)
	}
	variants := []variant{
		{"Bare", func(*testing.B) http.Handler { return ingest }, newKey},
		{"HandSetNX", func(b *testing.B) http.Handler {
			prefix := newStore(b, client, client, redisstore.Config{}).RedisKey("")
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				key := prefix + r.Header.Get("Idempotency-Key")
				ok, err := client.SetNX(ctx, key, inFlight, time.Minute).Result()
				if err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				if !ok {
					http.Error(w, "in flight", http.StatusConflict)
					return
				}
				ingest(w, r)
				if err := client.Set(ctx, key, completed, time.Hour).Err(); err != nil {
					b.Errorf("SET: %v", err)
				}
			})
		}, newKey},
		{"Memstore/FirstCall", func(b *testing.B) http.Handler {
			return newMiddleware(b, memstore.New(memstore.Config{}), middleware.Config{}).Handler(ingest)
		}, newKey},
		{"Redisstore/FirstCall", wrapped, newKey},
		{"Redisstore/FirstCall/NoAutoPipeline", func(b *testing.B) http.Handler {
			s := newStore(b, client, client, redisstore.Config{NoAutoPipeline: true})
			return newMiddleware(b, s, middleware.Config{}).Handler(ingest)
		}, newKey},
		{"Redisstore/Replay", wrapped, func(int64) string { return "hot-key" }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			srv := httptest.NewServer(v.handler(b))
			defer srv.Close()
			hc := srv.Client()
			hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
			if w := post(srv.Config.Handler, "hot-key"); w.Code != http.StatusCreated { // the key replays hit
				b.Fatalf("warm-up: status %d", w.Code)
			}
			var n atomic.Int64
			one := func() bool {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
				req.Header.Set("Idempotency-Key", v.key(n.Add(1)))
				resp, err := hc.Do(req)
				if err != nil {
					b.Error(err)
					return false
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Errorf("status %d", resp.StatusCode)
					return false
				}
				return true
			}
			b.ReportAllocs()
			cpu := startCPU(b, client)
			if clients == 1 {
				for b.Loop() {
					if !one() {
						break
					}
				}
			} else {
				b.SetParallelism(max(1, clients/testingProcs()))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if !one() {
							return
						}
					}
				})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			cpu.report(b)
		})
	}
}

// cpuMeter measures the CPU time the benchmark process and the Redis server
// spend, so that a run on a loaded machine still compares variants by the
// work they cost rather than by the wall time they happened to get.
type cpuMeter struct {
	redis    redis.UniversalClient
	self     time.Duration
	redisCPU time.Duration
}

func startCPU(b *testing.B, c redis.UniversalClient) *cpuMeter {
	m := &cpuMeter{redis: c}
	m.self, m.redisCPU = processCPU(b), redisCPU(b, c)
	return m
}

// report adds cpu-µs/op (this process) and redis-cpu-µs/op metrics.
func (m *cpuMeter) report(b *testing.B) {
	self, rc := processCPU(b)-m.self, redisCPU(b, m.redis)-m.redisCPU
	b.ReportMetric(float64(self.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(rc.Microseconds())/float64(b.N), "redis-cpu-µs/op")
}

func processCPU(b *testing.B) time.Duration {
	d, ok := testkit.ProcessCPU()
	if !ok {
		b.Fatal("no CPU time of the process on this system")
	}
	return d
}

func redisCPU(b *testing.B, c redis.UniversalClient) time.Duration {
	d, err := testkit.RedisCPU(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
