package ingest

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/promtext"
	"github.com/geoidem/geoidem/keystore"
)

// timedStore records the latency of every store operation, by operation and
// result, in a histogram.
type timedStore struct {
	keystore.Store
	ping    func(ctx context.Context) error
	latency *promtext.HistogramVec
}

func newTimedStore(s keystore.Store, ping func(ctx context.Context) error, reg *promtext.Registry) *timedStore {
	return &timedStore{Store: s, ping: ping, latency: reg.NewHistogramVec("geoidem_store_operation_seconds",
		"Latency of key store operations, by operation and result.", "op", promtext.ExponentialBuckets(0.0001, 2, 16))}
}

func (s *timedStore) observe(op string, start time.Time, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.latency.Observe(op+"_"+result, time.Since(start).Seconds())
}

func (s *timedStore) Claim(ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (keystore.Claim, error) {
	start := time.Now()
	c, err := s.Store.Claim(ctx, key, fp, lease)
	s.observe("claim", start, err)
	return c, err
}

func (s *timedStore) Extend(ctx context.Context, key string, tok keystore.Token, lease time.Duration) error {
	start := time.Now()
	err := s.Store.Extend(ctx, key, tok, lease)
	s.observe("extend", start, err)
	return err
}

func (s *timedStore) Complete(ctx context.Context, key string, tok keystore.Token, rec keystore.Record, retention time.Duration) error {
	start := time.Now()
	err := s.Store.Complete(ctx, key, tok, rec, retention)
	s.observe("complete", start, err)
	return err
}

func (s *timedStore) Release(ctx context.Context, key string, tok keystore.Token) error {
	start := time.Now()
	err := s.Store.Release(ctx, key, tok)
	s.observe("release", start, err)
	return err
}

// NonBlocking keeps the wrapped store's keystore.NonBlocking capability:
// timing adds no wait. A store that waits stays one behind the wrapper.
func (s *timedStore) NonBlocking() keystore.Store {
	if keystore.IsNonBlocking(s.Store) {
		return s
	}
	return nil
}

// Ping probes the store's server, without touching any key.
func (s *timedStore) Ping(ctx context.Context) error {
	if p, ok := s.Store.(keystore.Pinger); ok {
		return p.Ping(ctx)
	}
	return s.ping(ctx)
}

// health answers 200 when the key store answers a ping within a second, and
// 503 naming the store unreachable when it does not.
func health(store keystore.Pinger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		status, body := http.StatusOK, map[string]string{"status": "ok", "store": "reachable"}
		if err := store.Ping(ctx); err != nil {
			status, body = http.StatusServiceUnavailable, map[string]string{"status": "unhealthy", "store": "unreachable", "error": err.Error()}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	})
}
