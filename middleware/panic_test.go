package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoidem/geoidem/middleware"
)

// serveRecovering serves r and returns the panic the handler raised.
func serveRecovering(h http.Handler, w http.ResponseWriter, r *http.Request) (p any) {
	defer func() { p = recover() }()
	h.ServeHTTP(w, r)
	return nil
}

// A handler that sent a final, non-retryable answer and then panicked has
// done its work: the key must be completed, never released, or a retry runs
// the work again.
func TestPanicAfterFinalStatusIsRecorded(t *testing.T) {
	for _, c := range []struct {
		name  string
		panic any
	}{
		{"ErrAbortHandler", http.ErrAbortHandler},
		{"any panic", "boom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &spyStore{}
			var ev events
			m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
			var runs atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, `{"id":`)
				panic(c.panic)
			})
			if p := serveRecovering(m.Handler(h), httptest.NewRecorder(), post("k1", feature)); p != c.panic {
				t.Fatalf("recovered %v, want the handler's panic %v to propagate", p, c.panic)
			}
			if n := store.releases.Load(); n != 0 {
				t.Fatalf("releases = %d after a panic that followed a 201: the retry would run the handler again", n)
			}
			again := serve(m.Handler(h), post("k1", feature))
			if runs.Load() != 1 {
				t.Fatalf("handler ran %d times, want 1", runs.Load())
			}
			wantProblem(t, again, http.StatusCreated, middleware.ProblemNotRecorded)
			if again.Header().Get("Idempotent-Replayed") != "true" {
				t.Error("the retry is not marked as a replay")
			}
			if len(ev.all) == 0 || ev.all[0].Outcome != middleware.Executed || ev.all[0].Status != http.StatusCreated ||
				!errors.Is(ev.all[0].Err, middleware.ErrHandlerPanicked) {
				t.Errorf("first event %+v, want executed with the status sent, 201, and ErrHandlerPanicked", ev.all)
			}
		})
	}
}

// A panic after a retryable answer (or before any answer) still releases,
// and the observer reports the status that was sent.
func TestPanicAfterRetryableStatusReleases(t *testing.T) {
	store := &spyStore{}
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		panic(http.ErrAbortHandler)
	})
	if p := serveRecovering(m.Handler(h), httptest.NewRecorder(), post("k1", feature)); p != http.ErrAbortHandler {
		t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
	}
	if store.releases.Load() != 1 || store.completes.Load() != 0 {
		t.Fatalf("releases %d, completes %d; want the 503 released", store.releases.Load(), store.completes.Load())
	}
	if len(ev.all) != 1 || ev.all[0].Outcome != middleware.Released || ev.all[0].Status != http.StatusServiceUnavailable {
		t.Errorf("events %+v, want one released with the 503 that was sent", ev.all)
	}
}

// brokenWriter is a client that left after the headers: every body write
// fails.
type brokenWriter struct {
	h    http.Header
	code int
}

func (w *brokenWriter) Header() http.Header { return w.h }
func (w *brokenWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *brokenWriter) Write([]byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return 0, errors.New("write: broken pipe")
}

// httputil.ReverseProxy panics with http.ErrAbortHandler when the client
// leaves while it copies an upstream's answer: the upstream has executed
// the request, so its 201 must be kept, not released.
func TestReverseProxyAbortAfterUpstream201(t *testing.T) {
	var upstreamRuns atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamRuns.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, strings.Repeat(`{"created":true}`, 1000))
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = nil
	store := &spyStore{}
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})

	// ReverseProxy panics only when it runs under an http.Server.
	r := post("k1", feature)
	r = r.WithContext(context.WithValue(r.Context(), http.ServerContextKey, &http.Server{}))
	if p := serveRecovering(m.Handler(proxy), &brokenWriter{h: http.Header{}}, r); p != http.ErrAbortHandler {
		t.Fatalf("recovered %v, want http.ErrAbortHandler from the proxy", p)
	}
	if store.releases.Load() != 0 {
		t.Fatal("the proxied 201 was released: the retry will run the upstream again")
	}
	again := serve(m.Handler(proxy), post("k1", feature))
	if upstreamRuns.Load() != 1 {
		t.Fatalf("upstream ran %d times, want 1", upstreamRuns.Load())
	}
	if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d replayed=%q, want a replayed 201", again.Code, again.Header().Get("Idempotent-Replayed"))
	}
	if got := ev.outcomes(); !slices.Equal(got, []middleware.Outcome{middleware.Executed, middleware.Replayed}) {
		t.Errorf("outcomes %v, want [executed replayed]", got)
	}
}

// The rule: once its key is claimed, a request runs to its end, and what
// the handler answers is recorded, net/http's implicit 200 included, even
// when the client has gone. The middleware cannot tell "gave up" from
// "done, nothing to say" after the fact, so a handler that returns without
// a word is recorded as its implicit 200 (its context does not end when the
// client leaves, so it has no cause to give up); a handler that wants its
// work retried answers 5xx.
func TestHandlerThatReturnsWithoutAWordIsRecorded(t *testing.T) {
	store := &spyStore{}
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
	ctx, cancel := context.WithCancel(context.Background())
	var ctxErr error
	silent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the client times out
		ctxErr = r.Context().Err()
	})
	serve(m.Handler(silent), post("k1", feature).WithContext(ctx))
	if ctxErr != nil {
		t.Errorf("the handler's context ended (%v) when its client left, want it to run to its end", ctxErr)
	}
	if store.completes.Load() != 1 || store.releases.Load() != 0 {
		t.Fatalf("completes %d, releases %d; want the implicit 200 recorded", store.completes.Load(), store.releases.Load())
	}
	if got := ev.outcomes(); !slices.Equal(got, []middleware.Outcome{middleware.Executed}) {
		t.Errorf("outcomes %v, want [executed]", got)
	}
	h := newCounter()
	if w := serve(m.Handler(h), post("k1", feature)); w.Code != http.StatusOK || h.total.Load() != 0 || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d replayed=%q, handler runs %d; want the recorded 200 replayed", w.Code, w.Header().Get("Idempotent-Replayed"), h.total.Load())
	}
	// A handler that wants its work retried says so.
	retry := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	serve(m.Handler(retry), post("k2", feature).WithContext(ctx2))
	if w := serve(m.Handler(h), post("k2", feature)); w.Code != http.StatusCreated || h.total.Load() != 1 {
		t.Fatalf("retry after a 503: %d, handler runs %d; want the handler run again (201)", w.Code, h.total.Load())
	}
}

// A panic after a body that is provably complete (as long as the
// Content-Length the handler declared) records the response itself.
func TestPanicAfterCompleteBodyRecordsIt(t *testing.T) {
	store := &spyStore{}
	m := newMiddleware(t, store, middleware.Config{})
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "11")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"f1"}`)
		panic(http.ErrAbortHandler) // in a deferred cleanup, say
	})
	if p := serveRecovering(m.Handler(h), httptest.NewRecorder(), post("k1", feature)); p != http.ErrAbortHandler {
		t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
	}
	again := serve(m.Handler(h), post("k1", feature))
	if runs.Load() != 1 || again.Code != http.StatusCreated || again.Body.String() != `{"id":"f1"}` || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: runs %d, %d %q replayed=%q; want the recorded 201 and its body", runs.Load(), again.Code, again.Body, again.Header().Get("Idempotent-Replayed"))
	}
}
