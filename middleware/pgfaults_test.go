package middleware_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/middleware"
)

// deadLetterCount is a client.DeadLetterSink that keeps the keys.
type deadLetterCount struct {
	mu   sync.Mutex
	keys []string
}

func (d *deadLetterCount) Put(_ context.Context, dl client.DeadLetter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys = append(d.keys, dl.Key)
	return nil
}

// terminate kills every PostgreSQL backend whose application_name is app,
// as an operator's pg_terminate_backend or a failover would.
func terminate(ctx context.Context, admin *pgxpool.Pool, app string) (int, error) {
	var n int
	err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
	return n, err
}

// The default pairing under PostgreSQL backend kills: 200 events delivered
// by 8 senders with the client's default retry settings to a receiver on
// pgstore whose handler writes through the same pool (a failed write is
// answered 503, so its claim is released), while every backend of the
// receiver is killed with pg_terminate_backend 20 times. A kill may fail a
// release or a record, or lose a claim's reply, leaving a key in flight
// for the lease (10 s here); duplicates meet 409 meanwhile. Every event
// must be delivered in this one pass (no dead letter) and its write must
// have run exactly once.
func TestPostgresBackendKillsDeliverEverything(t *testing.T) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	app := "geoidem_mw_" + hex.EncodeToString(b[:])
	store, pool := newPGStoreApp(t, app)
	_, admin := newPGStoreApp(t, "")

	const (
		events  = 200
		senders = 8
		kills   = 20
		lease   = 10 * time.Second
	)
	m := newMiddleware(t, store, middleware.Config{Lease: lease})
	var (
		mu     sync.Mutex
		writes = map[string]int{}
		failed atomic.Int64
	)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The write: one statement on the receiver's pool.
		if _, err := pool.Exec(r.Context(), "SELECT pg_sleep(0.005)"); err != nil {
			failed.Add(1)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "feature store unavailable", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		writes[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	var dead deadLetterCount
	snd, err := client.New(srv.Client(), client.Config{DeadLetter: &dead})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var started atomic.Int64
	killed := make(chan struct{})
	go func() { // a kill after every tenth delivery started, 20 in all
		defer close(killed)
		for k := 1; k <= kills; k++ {
			for started.Load() < int64(k*events/(kills+1)) {
				time.Sleep(5 * time.Millisecond)
			}
			if _, err := terminate(ctx, admin, app); err != nil {
				t.Errorf("pg_terminate_backend: %v", err)
			}
		}
	}()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for i := range jobs {
				started.Add(1)
				body := fmt.Sprintf(`{"type":"Feature","id":"e%d","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`, i)
				_, _ = snd.Deliver(ctx, client.Delivery{URL: srv.URL + "/features", Key: fmt.Sprintf("event-%d", i), Body: []byte(body)})
			}
		})
	}
	start := time.Now()
	for i := range events {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	<-killed
	took := time.Since(start)

	twice := 0
	for i := range events {
		switch n := writes[fmt.Sprintf("event-%d", i)]; {
		case n > 1:
			twice++
			t.Errorf("event-%d: written %d times", i, n)
		}
	}
	t.Logf("%d events, %d backend kills, %d writes failed (503), %d dead letters, %d written twice, %v",
		events, kills, failed.Load(), len(dead.keys), twice, took.Round(time.Millisecond))
	if len(dead.keys) != 0 {
		t.Errorf("%d events dead-lettered in the first pass (%v), want none", len(dead.keys), dead.keys)
	}
	for i := range events {
		if writes[fmt.Sprintf("event-%d", i)] == 0 && !slices.Contains(dead.keys, fmt.Sprintf("event-%d", i)) {
			t.Errorf("event-%d: neither written nor dead-lettered", i)
		}
	}
	if failed.Load() == 0 {
		t.Error("no write failed: the kills proved nothing")
	}
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if err := m.Shutdown(sctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
