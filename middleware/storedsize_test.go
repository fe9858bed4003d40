package middleware_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// amplifying is a 1,154-byte body whose 422 is 53 times its size: a
// 500-byte property name, then 100 numbers out of range, each a problem
// whose pointer repeats the name.
func amplifying() string {
	var b strings.Builder
	b.WriteString(`{"type":"Feature","geometry":null,"properties":{"`)
	b.WriteString(strings.Repeat("n", 500))
	b.WriteString(`":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("1e999")
	}
	b.WriteString("]}}")
	return b.String()
}

// What the middleware stores for an invalid body is a small multiple of
// the body: the validator's answer is not recorded (the claim is
// released), and the same body always gets the same answer again.
func TestInvalidBodyStoresLittle(t *testing.T) {
	store := new(memstore.Store)
	m := newMiddleware(t, store, middleware.Config{Validator: geojson.RequestValidator{}})
	h := newCounter()
	body := amplifying()
	first := serve(m.Handler(h), post("k1", body))
	if first.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", first.Code)
	}
	stored := store.Stats().Bytes
	if limit := int64(2*len(body) + 512); stored > limit {
		t.Errorf("a %d-byte invalid body left %d bytes in the store (its answer is %d bytes), want at most %d",
			len(body), stored, first.Body.Len(), limit)
	}
	again := serve(m.Handler(h), post("k1", body))
	if again.Code != first.Code || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
		t.Errorf("the same invalid body again: %d (%d bytes), want the same 422 as the first", again.Code, again.Body.Len())
	}
	if again.Header().Get("Idempotent-Replayed") != "" {
		t.Error("the 422 was replayed from the store, want it answered afresh")
	}
	if h.total.Load() != 0 {
		t.Error("the handler ran for an invalid body")
	}
}
