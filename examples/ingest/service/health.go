package service

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// alwaysUp is the probe of a key store without keystore.Pinger (memstore,
// in the process), which the keystore package says to assume reachable.
type alwaysUp struct{}

func (alwaysUp) Ping(ctx context.Context) error { return ctx.Err() }

// probe returns what GET /healthz probes: the key store's own Ping (Redis
// and PostgreSQL have one).
func probe(s keystore.Store) keystore.Pinger {
	if p, ok := s.(keystore.Pinger); ok {
		return p
	}
	return alwaysUp{}
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
