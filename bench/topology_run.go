package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/middleware"
)

// One run of section 11: receivers behind one front, each with its own
// store client on the shared store, senders delivering events with
// retries, and a topology event fired once a third of the events are
// acknowledged. The handler counts its runs per key in this process, so
// the count survives whatever happens to the store.

// topoLease is the receivers' lease: short, so that a key left in flight by
// the event (a claim that survived, its completion lost) is free again
// within the run instead of after the default 30 s.
const topoLease = 2 * time.Second

// topoScope is the receivers' key scope: a key's stored key is
// middleware.StoreKey(topoScope, key), whose Cluster slot the migrations
// pick.
const topoScope = "features"

// topoResult is what one run measured.
type topoResult struct {
	events, acked, dead int
	deadBy              map[string]int // dead letters by their last answer
	lateFailed          map[string]int // late retries that failed, by their last answer
	unavailable         time.Duration  // from the event's start to the last 5xx or unanswered attempt
	twice               int            // keys whose handler ran more than once while the events were delivered
	lost                int            // acknowledged keys whose late retry ran the handler again
	attempts            int            // attempts of every delivery, the late retries excluded
	event               string
	eventTook           time.Duration
	elapsed             time.Duration
}

// topoRun describes one run: how to open the receivers' stores and the
// event to fire.
type topoRun struct {
	seed    uint64
	events  int
	senders int
	span    time.Duration // the events' first attempts are spread evenly over this
	stores  func(ctx context.Context, n int) ([]keystore.Store, func(), error)
	// fire performs the event; progress returns the keys acknowledged so
	// far and the keys being delivered, in event order. It returns a
	// description of what it did.
	fire func(ctx context.Context, keys []string, acked int) (string, error)
	// observe, if set, sees every store call of the receivers.
	observe func(middleware.StoreCall)
}

// runTopo runs one row of the section.
func runTopo(ctx context.Context, r topoRun) (topoResult, error) {
	const receivers = 2
	stores, closeStores, err := r.stores(ctx, receivers)
	if err != nil {
		return topoResult{}, err
	}
	defer closeStores()
	var (
		mu   sync.Mutex
		runs = map[string]int{}
	)
	work := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		runs[req.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // the ingest work
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"ok":true}`))
	})
	var hs []http.Handler
	for _, st := range stores {
		h, err := wrap(st, middleware.Config{Lease: topoLease, StoreTimeout: 500 * time.Millisecond, StoreObserver: r.observe,
			Scope: func(*http.Request) string { return topoScope }}, work)
		if err != nil {
			return topoResult{}, err
		}
		hs = append(hs, h)
	}
	var next atomic.Uint64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hs[next.Add(1)%uint64(len(hs))].ServeHTTP(w, req) // round robin: a retry meets the other receiver
	}))
	defer front.Close()
	hc := newClient(r.senders)
	defer hc.CloseIdleConnections()

	keys := make([]string, r.events)
	for i := range keys {
		keys[i] = fmt.Sprintf("evt-%d-%06d", r.seed, i)
	}
	res := topoResult{events: r.events}
	start := time.Now()
	acked := make([]bool, r.events)
	var nAcked, nAttempts, nDead atomic.Int64
	res.deadBy = map[string]int{}
	var deadMu sync.Mutex
	deliver := func(ctx context.Context, s *client.Sender, i int) (client.Result, error) {
		return s.Deliver(ctx, client.Delivery{URL: front.URL + "/features", Key: keys[i], Body: []byte(feature)})
	}
	var eventStart, lastFail atomic.Int64 // UnixNano
	onAttempt := func(a client.Attempt) {
		if a.StatusCode == 0 || a.StatusCode >= 500 {
			now := time.Now().UnixNano()
			for {
				old := lastFail.Load()
				if now <= old || lastFail.CompareAndSwap(old, now) {
					break
				}
			}
		}
	}
	senders := make([]*client.Sender, r.senders)
	for i := range senders {
		if senders[i], err = client.New(hc, client.Config{
			Backoff:        client.Backoff{Base: 20 * time.Millisecond, Cap: 500 * time.Millisecond},
			MaxAttempts:    30,
			Deadline:       40 * time.Second,
			AttemptTimeout: 5 * time.Second,
			MaxRetryAfter:  500 * time.Millisecond,
			Rand:           rand.NewPCG(r.seed, uint64(i)+1),
			OnAttempt:      onAttempt,
		}); err != nil {
			return res, err
		}
	}

	// The event, once a third of the events are acknowledged.
	eventDone := make(chan error, 1)
	go func() {
		for nAcked.Load() < int64(r.events/3) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		t0 := time.Now()
		eventStart.Store(t0.UnixNano())
		desc, err := r.fire(ctx, keys, int(nAcked.Load()))
		res.event, res.eventTook = desc, time.Since(t0)
		eventDone <- err
	}()

	work1 := make(chan int)
	var wg sync.WaitGroup
	for _, s := range senders {
		wg.Go(func() {
			for i := range work1 {
				out, err := deliver(ctx, s, i)
				nAttempts.Add(int64(out.Attempts))
				if err != nil {
					nDead.Add(1)
					deadMu.Lock()
					res.deadBy[lastAnswer(out, err)]++
					deadMu.Unlock()
					continue
				}
				acked[i] = true
				nAcked.Add(1)
			}
		})
	}
	pace := r.span / time.Duration(max(1, r.events))
	next1 := time.Now()
	for i := range r.events {
		if d := time.Until(next1); d > 0 {
			time.Sleep(d)
		}
		next1 = next1.Add(pace)
		work1 <- i
	}
	close(work1)
	wg.Wait()
	if err := <-eventDone; err != nil {
		return res, fmt.Errorf("event: %w", err)
	}
	mu.Lock()
	for _, n := range runs {
		if n > 1 {
			res.twice++
		}
	}
	before := make(map[string]int, len(runs))
	for k, n := range runs {
		before[k] = n
	}
	mu.Unlock()

	// Late retries: every acknowledged event once more. A handler run now
	// means its record was lost.
	work2 := make(chan int)
	res.lateFailed = map[string]int{}
	for _, s := range senders {
		wg.Go(func() {
			for i := range work2 {
				if out, err := deliver(ctx, s, i); err != nil {
					deadMu.Lock()
					res.lateFailed[lastAnswer(out, err)]++
					deadMu.Unlock()
				}
			}
		})
	}
	for i := range r.events {
		if acked[i] {
			work2 <- i
		}
	}
	close(work2)
	wg.Wait()
	mu.Lock()
	for k, n := range runs {
		if n > before[k] {
			res.lost++
		}
	}
	mu.Unlock()
	res.acked, res.dead, res.attempts = int(nAcked.Load()), int(nDead.Load()), int(nAttempts.Load())
	res.elapsed = time.Since(start)
	if l, e := lastFail.Load(), eventStart.Load(); l > e {
		res.unavailable = time.Duration(l - e)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.acked+res.dead != res.events {
		return res, errors.New("deliveries unaccounted for")
	}
	return res, nil
}

// lastAnswer names the last answer of a failed delivery: its status and
// problem title, or "no answer".
func lastAnswer(out client.Result, err error) string {
	if out.StatusCode == 0 {
		return "no answer"
	}
	why := fmt.Sprint(out.StatusCode)
	var se *client.StatusError
	if errors.As(err, &se) && se.Problem != nil {
		why += " " + se.Problem.Title
	}
	return why
}
