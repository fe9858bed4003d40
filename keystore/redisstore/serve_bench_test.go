package redisstore_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// BenchmarkServe measures one request served in process (no HTTP client or
// server around it) by the handler wrapped with the middleware on
// redisstore, first calls and replays, next to the same two Redis round
// trips made by hand: what the middleware and the store add to a request,
// in allocations and instructions, without the loopback's noise.
func BenchmarkServe(b *testing.B) {
	client := standaloneClient(b)
	inFlight, completed := bareValues()
	s := newStore(b, client, client, redisstore.Config{})
	wrapped := newMiddleware(b, s, middleware.Config{}).Handler(ingest)
	prefix := s.RedisKey("hand:")
	hand := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := prefix + r.Header.Get("Idempotency-Key")
		ok, err := client.SetNX(ctx, key, inFlight, time.Minute).Result()
		if err != nil || !ok {
			http.Error(w, "refused", http.StatusConflict)
			return
		}
		ingest(w, r)
		if err := client.Set(ctx, key, completed, time.Hour).Err(); err != nil {
			b.Errorf("SET: %v", err)
		}
	})
	if w := post(wrapped, "hot-key"); w.Code != http.StatusCreated {
		b.Fatalf("warm-up: status %d", w.Code)
	}
	for _, v := range []struct {
		name string
		h    http.Handler
		key  func(n int) string
	}{
		{"Hand", hand, func(n int) string { return "k" + strconv.Itoa(n) }},
		{"FirstCall", wrapped, func(n int) string { return "k" + strconv.Itoa(n) }},
		{"Replay", wrapped, func(int) string { return "hot-key" }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				if w := post(v.h, v.key(n)); w.Code != http.StatusCreated {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
