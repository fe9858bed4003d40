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
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/middleware"
)

// pairedSender serves h on loopback and returns the server and a paired
// sender with the default retry contract whose dead letters go to dead.
func pairedSender(t *testing.T, h http.Handler) (*httptest.Server, *client.Sender, *deadLetterCount) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dead := new(deadLetterCount)
	snd, err := client.New(srv.Client(), client.Config{DeadLetter: dead})
	if err != nil {
		t.Fatal(err)
	}
	return srv, snd, dead
}

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
	store, pool := newPGStoreApp(t, app, nil)
	_, admin := newPGStoreApp(t, "", nil)

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
	srv, snd, dead := pairedSender(t, h)
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

// The default pairing under a 3 s stall of the receiver's path to
// PostgreSQL (statements swallowed, nothing answered): 100 events by 8
// senders with the client's default settings; the stall begins once 40
// deliveries have started, so handlers that finish in it cannot record
// within their requests. Once everything is delivered and a lease (5 s)
// has passed, every event is sent again: each must be a replay, and each
// handler must have run exactly once. None may be dead-lettered.
func TestPostgresStallLosesNoRecord(t *testing.T) {
	var proxy *testkit.Cutter
	store, _ := newPGStoreApp(t, "", func(hostport string) string {
		var err error
		if proxy, err = testkit.NewCutter(hostport); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { proxy.Close() })
		return proxy.Addr()
	})
	const (
		nEvents = 100
		senders = 8
		lease   = 5 * time.Second
		stall   = 3 * time.Second
	)
	var ev events
	// A store timeout of 500 ms, as a receiver that must answer quickly
	// sets it: the handlers that finish in the stall cannot record within
	// their requests.
	m := newMiddleware(t, store, middleware.Config{Lease: lease, StoreTimeout: 500 * time.Millisecond, Observer: ev.observe})
	var (
		mu   sync.Mutex
		runs = map[string]int{}
	)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		runs[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the write
		w.WriteHeader(http.StatusCreated)
	}))
	srv, snd, dead := pairedSender(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	deliverAll := func(replays *atomic.Int64, started *atomic.Int64) {
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range senders {
			wg.Go(func() {
				for i := range jobs {
					started.Add(1)
					body := fmt.Sprintf(`{"type":"Feature","id":"e%d","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`, i)
					res, _ := snd.Deliver(ctx, client.Delivery{URL: srv.URL + "/features", Key: fmt.Sprintf("event-%d", i), Body: []byte(body)})
					if res.Replayed {
						replays.Add(1)
					}
				}
			})
		}
		for i := range nEvents {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
	}
	var started, replays atomic.Int64
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		for started.Load() < 40 {
			time.Sleep(time.Millisecond)
		}
		proxy.Stall()
		time.Sleep(stall)
		proxy.Restore()
	}()
	deliverAll(&replays, &started)
	<-stalled
	unrecorded := 0
	ev.mu.Lock()
	all := append([]middleware.Event(nil), ev.all...)
	ev.mu.Unlock()
	for _, e := range all {
		if e.Outcome == middleware.StoreError && e.Status == http.StatusCreated {
			unrecorded++
		}
	}
	time.Sleep(lease + time.Second)
	var again, replayed atomic.Int64
	deliverAll(&replayed, &again)

	twice := 0
	for i := range nEvents {
		if n := runs[fmt.Sprintf("event-%d", i)]; n != 1 {
			twice++
			t.Errorf("event-%d: handler ran %d times, want 1", i, n)
		}
	}
	t.Logf("%d events, a %v stall: %d records failed within their request, %d dead letters, %d handlers ran twice, %d of %d re-sent events replayed",
		nEvents, stall, unrecorded, len(dead.keys), twice, replayed.Load(), nEvents)
	if unrecorded == 0 {
		t.Error("no record failed within its request: the stall proved nothing")
	}
	if len(dead.keys) != 0 {
		t.Errorf("%d events dead-lettered in the first pass (%v), want none", len(dead.keys), dead.keys)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if err := m.Shutdown(sctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
