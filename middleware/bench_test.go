package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// ingestHandler is the bare handler of the benchmarks: it reads the body and
// answers a small JSON document, as a minimal ingest endpoint would.
var ingestHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"stored":["f1"],"bytes":`+strconv.Itoa(len(body))+`}`)
})

// BenchmarkMiddleware compares the bare handler with the handler wrapped
// with memstore, for first calls (every request a new key) and replays (one
// completed key), in process and over loopback HTTP with parallel clients.
// Compare the ns/op of FirstCall and Replay with Bare of the same run.
func BenchmarkMiddleware(b *testing.B) {
	newWrapped := func(b *testing.B) http.Handler {
		// Room for every key a long run makes: a full memstore refuses new
		// claims rather than evict records, and FirstCall never repeats one.
		store := memstore.New(memstore.Config{MaxEntries: 1 << 24, MaxBytes: 1 << 34})
		m, err := middleware.New(store, middleware.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return m.Handler(ingestHandler)
	}
	variants := []variant{
		// The bare handler gets the same requests, key header included: only
		// the middleware differs between the variants.
		{"Bare", func(*testing.B) http.Handler { return ingestHandler }, func(n int64) string { return "key-" + strconv.FormatInt(n, 10) }},
		{"FirstCall", newWrapped, func(n int64) string { return "key-" + strconv.FormatInt(n, 10) }},
		{"Replay", newWrapped, func(int64) string { return "hot-key" }},
	}

	b.Run("InProcess", func(b *testing.B) {
		for _, v := range variants {
			b.Run(v.name, func(b *testing.B) {
				h := v.handler(b)
				var n int64
				b.ReportAllocs()
				b.SetBytes(int64(len(feature)))
				for b.Loop() {
					n++
					r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(feature))
					r.Header.Set("Idempotency-Key", v.key(n))
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != http.StatusCreated {
						b.Fatalf("status %d", w.Code)
					}
				}
			})
		}
	})

	for _, clients := range []int{0, 64} { // 0: GOMAXPROCS clients
		name := "HTTP"
		if clients > 0 {
			name = "HTTP" + strconv.Itoa(clients)
		}
		b.Run(name, func(b *testing.B) { httpBench(b, variants, clients) })
	}
}

type variant struct {
	name    string
	handler func(b *testing.B) http.Handler
	key     func(n int64) string
}

// httpBench runs each variant over loopback HTTP with the given number of
// concurrent clients (0: GOMAXPROCS).
func httpBench(b *testing.B, variants []variant, clients int) {
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			srv := httptest.NewServer(v.handler(b))
			defer srv.Close()
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = max(64, clients)
			if clients > 0 {
				b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			}
			var n atomic.Int64
			if v.name == "Replay" { // complete the hot key before the clock starts
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
				req.Header.Set("Idempotency-Key", v.key(0))
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(feature)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
					req.Header.Set("Idempotency-Key", v.key(n.Add(1)))
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
