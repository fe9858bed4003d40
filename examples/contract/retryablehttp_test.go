package contract_test

// A sender no one here wrote, github.com/hashicorp/go-retryablehttp, posts
// through the middleware: the contract holds for it too. It knows nothing of
// idempotency keys; the key is a header set on the request, which it sends
// unchanged, with the same body, on every attempt.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// retryable is a retryablehttp.Client with short waits. Its Backoff
// records the wait retryablehttp chose (Retry-After included) and waits a
// fiftieth of it, so that a Retry-After of one second costs 20 ms.
type retryable struct {
	*retryablehttp.Client
	mu    sync.Mutex
	waits []time.Duration
	tries atomic.Int64
}

func newRetryable(t *testing.T) *retryable {
	c := &retryable{Client: retryablehttp.NewClient()}
	c.RetryWaitMin, c.RetryWaitMax, c.RetryMax = time.Millisecond, 10*time.Millisecond, 5
	c.Logger = nil
	c.Backoff = func(lo, hi time.Duration, n int, resp *http.Response) time.Duration {
		d := retryablehttp.DefaultBackoff(lo, hi, n, resp)
		c.mu.Lock()
		c.waits = append(c.waits, d)
		c.mu.Unlock()
		return d / 50
	}
	c.RequestLogHook = func(retryablehttp.Logger, *http.Request, int) { c.tries.Add(1) }
	t.Cleanup(c.HTTPClient.CloseIdleConnections)
	return c
}

func (c *retryable) waited() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string {
	return fmt.Sprintf("%d, Idempotent-Replayed: %q, Retry-After: %q, body %q", a.status, a.header.Get("Idempotent-Replayed"), a.header.Get("Retry-After"), a.body)
}

func (a answer) replayed() bool { return a.header.Get("Idempotent-Replayed") == "true" }

// post posts body to url with key as its Idempotency-Key.
func (c *retryable) post(t *testing.T, url, key string, body []byte) answer {
	t.Helper()
	a, err := c.tryPost(t.Context(), url, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// tryPost is post for goroutines other than the test's.
func (c *retryable) tryPost(ctx context.Context, url, key string, body []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/geo+json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("retryablehttp: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("reading the answer: %w", err)
	}
	return answer{resp.StatusCode, resp.Header, b}, nil
}

func feature(id string) []byte {
	return []byte(`{"type":"Feature","id":"` + id + `","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`)
}

// dropFirstAnswer serves h, but lets it answer the first request to a
// recorder and then closes the connection: the acknowledgement is lost.
type dropFirstAnswer struct {
	h     http.Handler
	n     atomic.Int64
	first atomic.Pointer[httptest.ResponseRecorder]
}

func (d *dropFirstAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.n.Add(1) > 1 {
		d.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, r)
	d.first.Store(rec)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.Close()
}

func TestRetryablehttpLostAcknowledgementIsReplayed(t *testing.T) {
	h := new(ingest)
	drop := &dropFirstAnswer{h: wrapped(t, newStore(), h)}
	srv := httptest.NewServer(drop)
	defer srv.Close()
	c := newRetryable(t)

	got := c.post(t, srv.URL+"/features", "rhttp-lost-ack", feature("lost-ack"))
	if drop.n.Load() != 2 || c.tries.Load() != 2 {
		t.Errorf("the server saw %d requests and retryablehttp made %d attempts, want 2 and 2", drop.n.Load(), c.tries.Load())
	}
	first := drop.first.Load()
	if first == nil || first.Code != http.StatusCreated {
		t.Fatalf("the dropped first answer: %+v, want 201", first)
	}
	if got.status != first.Code || !got.replayed() || !bytes.Equal(got.body, first.Body.Bytes()) {
		t.Errorf("the retry after the lost acknowledgement: %v\nwant a replay of the dropped answer: %d %q", got, first.Code, first.Body.Bytes())
	}
	if n := h.executions(); n != 1 {
		t.Errorf("the handler ran %d times, want 1: the retry must be replayed, not executed", n)
	}
}

// The middleware answers 503 with Retry-After when its store is down, and
// runs nothing; retryablehttp waits the Retry-After and retries.
func TestRetryablehttpStoreDownIsRetried(t *testing.T) {
	h := new(ingest)
	store := &flakyStore{Store: newStore()}
	store.failures.Store(1)
	srv := httptest.NewServer(wrapped(t, store, h))
	defer srv.Close()
	c := newRetryable(t)

	got := c.post(t, srv.URL+"/features", "rhttp-store-down", feature("store-down"))
	if got.status != http.StatusCreated || got.replayed() {
		t.Errorf("after a 503 from a store outage: %v, want a fresh 201", got)
	}
	if w := c.waited(); len(w) != 1 || w[0] != time.Second {
		t.Errorf("retryablehttp waited %v, want [1s]: the middleware's Retry-After", w)
	}
	if n := h.executions(); n != 1 {
		t.Errorf("the handler ran %d times, want 1 (not during the outage)", n)
	}
}

// A handler's own 503 releases the claim: the retry runs the handler again
// and its success is what is recorded.
func TestRetryablehttpHandler503IsRetried(t *testing.T) {
	h := new(ingest)
	var calls atomic.Int64
	flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(wrapped(t, newStore(), flaky))
	defer srv.Close()
	c := newRetryable(t)

	got := c.post(t, srv.URL+"/features", "rhttp-503", feature("503"))
	if got.status != http.StatusCreated || got.replayed() || calls.Load() != 2 {
		t.Errorf("after the handler's 503: %v after %d handler calls, want a fresh 201 after 2", got, calls.Load())
	}
	if w := c.waited(); len(w) != 1 || w[0] != time.Second {
		t.Errorf("retryablehttp waited %v, want [1s]: the handler's Retry-After", w)
	}
	again := c.post(t, srv.URL+"/features", "rhttp-503", feature("503"))
	if again.status != http.StatusCreated || !again.replayed() || !bytes.Equal(again.body, got.body) {
		t.Errorf("a later retry: %v, want the 201 replayed", again)
	}
}

// Concurrent duplicates execute once. retryablehttp does not retry 409, so
// by default some duplicates end with the middleware's 409 in flight; with
// Config.WaitInFlight every one ends with the single executed answer.
func TestRetryablehttpConcurrentDuplicatesExecuteOnce(t *testing.T) {
	for _, wait := range []time.Duration{0, 5 * time.Second} {
		t.Run(fmt.Sprintf("WaitInFlight=%v", wait), func(t *testing.T) {
			const n = 50
			h := &ingest{work: 50 * time.Millisecond}
			idem, err := middleware.New(new(memstore.Store), middleware.Config{WaitInFlight: wait})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(idem.Handler(h))
			defer srv.Close()
			c := newRetryable(t)
			c.HTTPClient.Transport.(*http.Transport).MaxIdleConnsPerHost = n

			answers := make([]answer, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-gate
					answers[i], errs[i] = c.tryPost(t.Context(), srv.URL+"/features", "rhttp-concurrent", feature("concurrent"))
				})
			}
			close(gate)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("a duplicate failed: %v", err)
				}
			}

			var fresh []answer
			conflicts := 0
			for _, a := range answers {
				switch {
				case a.status == http.StatusCreated && !a.replayed():
					fresh = append(fresh, a)
				case a.status == http.StatusConflict && wait == 0 && a.header.Get("Retry-After") != "":
					conflicts++
				}
			}
			if len(fresh) != 1 {
				t.Fatalf("%d answers were fresh 201s, want exactly 1: %v", len(fresh), answers)
			}
			for _, a := range answers {
				if a.status == http.StatusConflict && wait == 0 && a.header.Get("Retry-After") != "" {
					continue
				}
				if a.status != http.StatusCreated || !bytes.Equal(a.body, fresh[0].body) {
					t.Errorf("answer %v, want the executed answer %v replayed (or, without WaitInFlight, 409 with Retry-After)", a, fresh[0])
				}
			}
			if got := h.executions(); got != 1 {
				t.Errorf("the handler ran %d times for %d concurrent duplicates, want 1", got, n)
			}
			t.Logf("%d duplicates: 1 executed, %d replayed, %d answered 409 in flight", n, n-1-conflicts, conflicts)
		})
	}
}
