package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// The most common Go handler does its work and returns without writing:
// net/http answers 200 OK. When its client has timed out meanwhile, that
// answer is still the outcome of the work: it is recorded, and the
// sender's retry is replayed, not run again.
func TestImplicit200AfterClientLeftIsRecorded(t *testing.T) {
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	var runs atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the client times out while the work is done
		runs.Add(1)
	})
	serve(m.Handler(work), post("k1", feature).WithContext(ctx))
	w := serve(m.Handler(work), post("k1", feature))
	if runs.Load() != 1 || w.Code != http.StatusOK || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: runs %d, %d replayed=%q; want the implicit 200 replayed and one run", runs.Load(), w.Code, w.Header().Get("Idempotent-Replayed"))
	}
}

// The same over a real server: the client gives up (its context ends), the
// server notices the connection is gone, and only then does the handler
// return, without writing. The retry is replayed.
func TestImplicit200AfterClientTimeoutOverHTTP(t *testing.T) {
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	var runs atomic.Int64
	serverCtx := make(chan context.Context, 1) // the server's own request context
	started := make(chan struct{}, 1)
	handlerCtxErr := make(chan error, 1)
	work := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) > 1 {
			return
		}
		started <- struct{}{}
		sctx := <-serverCtx
		select {
		case <-sctx.Done(): // the server saw the client leave
		case <-time.After(30 * time.Second):
			t.Error("the server never noticed that the client left")
		}
		handlerCtxErr <- r.Context().Err()
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case serverCtx <- r.Context():
		default:
		}
		work.ServeHTTP(w, r)
	}))
	defer srv.Close()

	send := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
		req.Header.Set("Idempotency-Key", "k1")
		return srv.Client().Do(req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		resp, err := send(ctx)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-started
	cancel() // the client's timeout
	if err := <-errc; err == nil {
		t.Fatal("the first attempt succeeded, want the client to have given up")
	}
	// The retry comes while or after the original ends: 409 until it is
	// recorded, then the replay.
	var resp *http.Response
	for range 3000 {
		var err error
		if resp, err = send(context.Background()); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if runs.Load() != 1 || resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: runs %d, %d replayed=%q; want the implicit 200 replayed and one run", runs.Load(), resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	if err := <-handlerCtxErr; err != nil {
		t.Errorf("the handler's context ended (%v) when its client left, want it to run to its end", err)
	}
}

// Config.HandlerTimeout bounds the handler: its context ends with cause
// ErrHandlerTimeout. A handler that then answers 5xx is released, so the
// retry runs it again. Without it, nothing but the lease ends the context.
func TestHandlerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMiddleware(t, new(memstore.Store), middleware.Config{HandlerTimeout: 5 * time.Second})
		start := time.Now()
		var cause error
		var ranFor time.Duration
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			cause, ranFor = context.Cause(r.Context()), time.Since(start)
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		if w := serve(m.Handler(slow), post("k1", feature)); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want the handler's 503", w.Code)
		}
		if !errors.Is(cause, middleware.ErrHandlerTimeout) || ranFor != 5*time.Second {
			t.Fatalf("the handler's context ended after %v with cause %v, want 5s and ErrHandlerTimeout", ranFor, cause)
		}
		h := newCounter()
		if w := serve(m.Handler(h), post("k1", feature)); w.Code != http.StatusCreated || h.total.Load() != 1 {
			t.Fatalf("retry: %d, runs %d; want the handler run again", w.Code, h.total.Load())
		}
	})
	if _, err := middleware.New(new(memstore.Store), middleware.Config{HandlerTimeout: -time.Second}); err == nil {
		t.Error("New accepted a negative HandlerTimeout")
	}
}
