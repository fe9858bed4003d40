package redisstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// What Redis keeps for an invalid body is a small multiple of the body:
// the validator's answer (here 53 times the body) is not recorded.
func TestInvalidBodyStoresLittle(t *testing.T) {
	c := standaloneClient(t)
	prefix := randomPrefix(t)
	s := newStore(t, c, c, redisstore.Config{KeyPrefix: prefix})
	m := newMiddleware(t, s, middleware.Config{Validator: geojson.RequestValidator{}})
	var b strings.Builder
	b.WriteString(`{"type":"Feature","geometry":null,"properties":{"` + strings.Repeat("n", 500) + `":[`)
	b.WriteString(strings.TrimSuffix(strings.Repeat("1e999,", 100), ","))
	b.WriteString("]}}")
	body := b.String()
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r.Header.Set("Idempotency-Key", "k1")
	r.Header.Set("Content-Type", "application/geo+json")
	w := httptest.NewRecorder()
	m.Handler(ingest).ServeHTTP(w, r)
	if w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", w.Code)
	}
	ctx := context.Background()
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, k := range keys {
		n, err := c.MemoryUsage(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		stored += n
	}
	if limit := int64(2*len(body) + 512); stored > limit {
		t.Errorf("a %d-byte invalid body left %d bytes in Redis (MEMORY USAGE of %d keys; the answer is %d bytes), want at most %d",
			len(body), stored, len(keys), w.Body.Len(), limit)
	}
	t.Logf("%d-byte body: %d bytes stored in %d keys", len(body), stored, len(keys))
}
