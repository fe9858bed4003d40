package service

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/middleware"
)

// acquireStore is a key store that acquires every key and forgets every
// record: the benchmarks below measure validation and the handler, not a
// store.
type acquireStore struct{}

func (s *acquireStore) Claim(_ context.Context, _ string, a keystore.ClaimArgs) (keystore.Claim, error) {
	return keystore.Claim{Acquired: true, State: keystore.InFlight, Fingerprint: a.Fingerprint}, nil
}
func (*acquireStore) Extend(context.Context, string, keystore.Token, time.Duration) (time.Duration, error) {
	return 0, nil
}
func (*acquireStore) Complete(context.Context, string, keystore.Token, []byte, time.Duration) error {
	return nil
}
func (*acquireStore) Release(context.Context, string, keystore.Token) error { return nil }

// webhookFeature is a webhook-sized Feature (about 1.5 KB): a 40-vertex
// polygon and a few properties.
func webhookFeature() []byte {
	b := testkit.Polygon(40, false)
	return bytes.Replace(b, []byte(`"properties":{"name":"bench"}`),
		[]byte(`"id":"evt-8f3a","properties":{"name":"parcel 12","owner":"ACME","area_m2":1532.25,"tags":["a","b"]}`), 1)
}

// collection returns a FeatureCollection of n point features with properties.
func collection(n int) []byte {
	b := []byte(`{"type":"FeatureCollection","features":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"type":"Feature","id":"f%d","geometry":{"type":"Point","coordinates":[%d.125,%d.5,%d]},"properties":{"n":%d,"name":"feature %d"}}`,
			i, i%180, i%90, i%1000, i, i)
	}
	return append(b, "]}"...)
}

// BenchmarkValidateAndHandle is one POST /features in process: the
// middleware (on a store that only acquires), the GeoJSON validation and
// the ingest handler writing to the in-memory feature store.
//
//	go test -run '^$' -bench ValidateAndHandle -benchmem ./examples/ingest/service
func BenchmarkValidateAndHandle(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"Feature", webhookFeature()},
		{"Collection1000", collection(1000)},
	} {
		for _, v := range []struct {
			name    string
			handler http.Handler
		}{
			{c.name, http.HandlerFunc(handlerOnly().postFeatures)},
			// The middleware and the validator with a handler that only
			// answers: what the ingest handler adds is the difference.
			{c.name + "/ValidateOnly", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })},
		} {
			benchPost(b, v.name, c.body, v.handler)
		}
	}
}

func benchPost(b *testing.B, name string, body []byte, handler http.Handler) {
	b.Run(name, func(b *testing.B) {
		idem, err := middleware.New(new(acquireStore), middleware.Config{Validator: geojson.RequestValidator{}})
		if err != nil {
			b.Fatal(err)
		}
		h := idem.Handler(handler)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		var n int
		for b.Loop() {
			n++
			r := httptest.NewRequest(http.MethodPost, "/features", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/geo+json")
			r.Header.Set("Idempotency-Key", "k"+strconv.Itoa(n))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

// handlerOnly is a Service with only what postFeatures uses: the in-memory
// feature store, and counters registered nowhere.
func handlerOnly() *Service {
	s := &Service{features: newMemoryFeatures(0, 0), log: slog.New(slog.DiscardHandler), orderProperty: DefaultOrderProperty, retryAfter: time.Second}
	for i := range s.counts {
		s.counts[i] = prometheus.NewCounter(prometheus.CounterOpts{Name: "features"})
	}
	return s
}
