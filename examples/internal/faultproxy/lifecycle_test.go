package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"
)

// heldRequest starts a proxy that delays every request for an hour and
// posts one request through it from a goroutine; it returns once the
// proxy has decided to hold that request, with the post's error to come
// on done.
func heldRequest(t *testing.T) (*backend, *Proxy, <-chan error) {
	t.Helper()
	b := newBackend(t)
	held := make(chan struct{})
	p, u := start(t, b, Config{
		Delay:      1,
		DelayFor:   time.Hour,
		OnDecision: func(uint64, *http.Request, Fault) { close(held) },
	})
	done := make(chan error, 1)
	go func() {
		_, _, err := post(freshClient(t, 0), u, "a")
		done <- err
	}()
	<-held
	return b, p, done
}

// TestShutdownDeadline: a Shutdown whose ctx ends first closes the proxy
// at once; the held request is never forwarded.
func TestShutdownDeadline(t *testing.T) {
	b, p, done := heldRequest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	if err := <-done; err == nil {
		t.Error("the client got an answer from a closed proxy")
	}
	if n := b.got.Load(); n != 0 {
		t.Errorf("backend got %d requests, want 0", n)
	}
}

func shutdown(t *testing.T, p *Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestCloseEndsDelay: Close does not wait out a long delay, and the held
// request is never forwarded.
func TestCloseEndsDelay(t *testing.T) {
	b, p, done := heldRequest(t)
	closed := make(chan struct{})
	go func() { _ = p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close is waiting out the delay")
	}
	if err := <-done; err == nil {
		t.Error("the client got an answer from a closed proxy")
	}
	if n := b.got.Load(); n != 0 {
		t.Errorf("backend got %d requests after Close, want 0", n)
	}
	if st := p.Stats(); st.Forwarded != 0 || st.Delay != 1 {
		t.Errorf("Stats = %+v", st)
	}
	if _, err := p.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

// TestNoGoroutinesAfterClose runs every fault concurrently over keep-alive
// connections, leaves a long delay pending, closes the proxy, and checks
// that the goroutine count comes back to where it was, with the backend
// still running (so the proxy must have closed its own connections to it).
func TestNoGoroutinesAfterClose(t *testing.T) {
	b := newBackend(t)
	before := runtime.NumGoroutine()
	p, err := New(b.url(t), Config{
		Seed: 3, LostAck: 0.15, Inject503: 0.15, Inject429: 0.15, Reset: 0.15, Delay: 0.15,
		DelayFor: 20 * time.Millisecond, Schedule: map[uint64]Fault{1: Delay},
	})
	if err != nil {
		t.Fatal(err)
	}
	u, err := p.Start()
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				_, _, _ = post(c, u, fmt.Sprintf("%d-%d", w, i))
			}
		})
	}
	wg.Wait()
	// One request held for an hour when Close comes.
	held := make(chan struct{})
	if err := p.SetConfig(Config{Delay: 1, DelayFor: time.Hour, OnDecision: func(uint64, *http.Request, Fault) { close(held) }}); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _, _, _ = post(c, u, "held") })
	<-held
	_ = p.Close()
	wg.Wait()
	tr.CloseIdleConnections()

	st := p.Stats()
	if st.Requests < 81 || st.Requests != st.None+st.LostAck+st.Inject503+st.Inject429+st.Reset+st.Delay+st.Down {
		t.Errorf("Stats do not add up: %+v", st)
	}
	if got := uint64(b.got.Load()); st.Forwarded != got {
		t.Errorf("Forwarded = %d, backend got %d", st.Forwarded, got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond) // goroutines finishing their last steps
	}
}

// TestCloseWaitsForRequests: Close does not return while a request is
// still being handled.
func TestCloseWaitsForRequests(t *testing.T) {
	b := newBackend(t)
	inside, unblock := make(chan struct{}), make(chan struct{})
	p, u := start(t, b, Config{OnDecision: func(uint64, *http.Request, Fault) {
		close(inside)
		<-unblock
	}})
	go func() { _, _, _ = post(freshClient(t, 0), u, "a") }()
	<-inside
	closed := make(chan struct{})
	go func() { _ = p.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a request was in progress")
	case <-time.After(20 * time.Millisecond):
	}
	close(unblock)
	within(t, closed, "Close")
}
