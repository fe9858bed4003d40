package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// TestOutboxStop: once its Sender is stopped (Sender.Stop: a SIGINT), a
// delivery starts no new attempt, neither a first one nor a retry, and a
// wait between attempts ends at once; an attempt in flight runs to its end
// and its answer counts; one cut off later by the context (the grace
// period is over) ends the delivery too. A delivery stopped so is
// ErrInterrupted: never dead-lettered, and left pending in the journal
// when it was recorded, so that a re-run sends it.
func TestOutboxStop(t *testing.T) {
	var (
		mu       sync.Mutex
		requests = map[string]int{}
	)
	started, release := make(chan string, 4), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		io.Copy(io.Discard, r.Body) // so that the server sees the client leave
		mu.Lock()
		requests[key]++
		mu.Unlock()
		switch key {
		case "wait":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "inflight":
			started <- key
			<-release
			w.WriteHeader(http.StatusCreated)
		case "cut":
			started <- key
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer srv.Close()
	sent := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return requests[key]
	}
	sink := &memSink{}
	clock := &blockingClock{sleeping: make(chan time.Duration, 1)}
	newSender := func() *client.Sender {
		s, err := client.New(nil, withClock(clock, client.Config{MaxAttempts: 3, Rand: newSource(1), DeadLetter: sink}))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := newSender()
	j := openJournal(t, filepath.Join(t.TempDir(), "journal"), client.FileJournalConfig{})
	ob := client.NewOutbox(s, j)
	d := func(key string) client.Delivery {
		return client.Delivery{URL: srv.URL + "/features", Key: key, Body: []byte(`{"k":"` + key + `"}`)}
	}
	// A generous bound instead of a hang if the stop is not seen.
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 20*time.Second)
	}
	interrupted := func(name string, res client.Result, err error, attempts int) {
		t.Helper()
		var derr *client.DeliveryError
		if !errors.Is(err, client.ErrInterrupted) || !errors.As(err, &derr) || res.Attempts != attempts || derr.ReasonName() != "interrupted" {
			t.Errorf("%s: err = %v; want ErrInterrupted (\"interrupted\") after %d attempts", name, err, attempts)
		}
	}

	// Each case stops a sender of its own, over the one journal.
	outbox := func() (*client.Sender, *client.Outbox) {
		s := newSender()
		return s, client.NewOutbox(s, j)
	}

	// Stopped before it starts: nothing sent.
	s1, ob1 := outbox()
	s1.Stop()
	ctx, cancel := bounded()
	res, err := ob1.Deliver(ctx, d("before"))
	cancel()
	interrupted("stopped before", res, err, 0)
	if n := sent("before"); n != 0 {
		t.Errorf("stopped before: %d requests, want 0", n)
	}

	// Stopped while waiting to retry: the wait ends, no retry.
	s2, ob2 := outbox()
	go func() { <-clock.sleeping; s2.Stop() }()
	ctx, cancel = bounded()
	res, err = ob2.Deliver(ctx, d("wait"))
	cancel()
	interrupted("stopped in a wait", res, err, 1)
	if n := sent("wait"); n != 1 {
		t.Errorf("stopped in a wait: %d requests, want 1", n)
	}

	// Stopped during an attempt that then succeeds: delivered.
	s3, ob3 := outbox()
	go func() { <-started; s3.Stop(); close(release) }()
	ctx, cancel = bounded()
	res, err = ob3.Deliver(ctx, d("inflight"))
	cancel()
	if err != nil || res.Attempts != 1 {
		t.Errorf("an attempt in flight at the stop: %+v, %v; want delivered by it", res, err)
	}

	// Stopped during an attempt, then cut off (the grace period is over).
	s4, ob4 := outbox()
	ctx, cancel = bounded()
	go func() { <-started; s4.Stop(); cancel() }()
	res, err = ob4.Deliver(ctx, d("cut"))
	cancel()
	interrupted("cut off after the stop", res, err, 1)

	if dls := sink.All(); len(dls) != 0 {
		t.Errorf("%d dead letters (first: %s, %q); want none: an interrupted delivery did not fail", len(dls), dls[0].Key, dls[0].Reason)
	}
	pending, _ := j.Pending(context.Background())
	var keys []string
	for _, e := range pending {
		keys = append(keys, e.Key)
	}
	if len(keys) != 2 || keys[0] != "wait" || keys[1] != "cut" {
		t.Errorf("pending in the journal %q, want [wait cut]", keys)
	}

	// Without a stop, a canceled delivery is still dead-lettered.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := ob.Deliver(ctx, d("canceled")); !errors.Is(err, context.Canceled) || len(sink.All()) != 1 {
		t.Errorf("canceled without a stop: %v, %d dead letters; want context.Canceled, dead-lettered", err, len(sink.All()))
	}
}
