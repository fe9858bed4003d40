package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// One test per row of the contract table in the package documentation.

func TestMethodNotCoveredPassesThrough(t *testing.T) {
	h := newCounter()
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		r := httptest.NewRequest(method, "/features", nil) // no key: would be 400 if covered
		if w := serve(m.Handler(h), r); w.Code != http.StatusCreated {
			t.Errorf("%s without a key: %d, want the handler's 201", method, w.Code)
		}
	}
	// Covered methods are configurable.
	m = newMiddleware(t, new(memstore.Store), middleware.Config{Methods: []string{"put"}})
	if w := serve(m.Handler(h), httptest.NewRequest(http.MethodPut, "/features", nil)); w.Code != http.StatusBadRequest {
		t.Errorf("PUT covered by Config.Methods, without a key: %d, want 400", w.Code)
	}
	if w := serve(m.Handler(h), post("", feature)); w.Code != http.StatusCreated {
		t.Errorf("POST not covered by Config.Methods: %d, want the handler's 201", w.Code)
	}
}

func TestMissingKey(t *testing.T) {
	h := newCounter()
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	wantProblem(t, serve(m.Handler(h), post("", feature)), http.StatusBadRequest, middleware.ProblemMissingKey)
	if h.total.Load() != 0 {
		t.Fatal("the handler ran for a request without a key")
	}
	opt := newMiddleware(t, new(memstore.Store), middleware.Config{KeyOptional: true})
	if w := serve(opt.Handler(h), post("", feature)); w.Code != http.StatusCreated {
		t.Fatalf("KeyOptional without a key: %d, want the handler's answer", w.Code)
	}
	if w := serve(opt.Handler(h), post("\x01", feature)); w.Code != http.StatusBadRequest {
		t.Fatalf("KeyOptional with a malformed key: %d, want 400", w.Code)
	}
}

func TestMalformedKeys(t *testing.T) {
	h := newCounter()
	store := new(memstore.Store)
	m := newMiddleware(t, store, middleware.Config{})
	for name, key := range map[string]string{
		"control character":    "abc\x01def",
		"DEL":                  "abc\x7f",
		"non-ASCII":            "clé-1",
		"256 characters":       strings.Repeat("k", 256),
		"10 KB":                strings.Repeat("k", 10<<10),
		"only spaces":          "   ",
		"empty sf-string":      `""`,
		"unterminated string":  `"abc`,
		"bad escape":           `"a\nb"`,
		"after closing quote":  `"abc"def`,
		"sf-string over limit": `"` + strings.Repeat("k", 256) + `"`,
		"tab inside":           "a\tb",
		"two keys combined":    "key-1, key-2",
	} {
		t.Run(name, func(t *testing.T) {
			r := post("", feature)
			r.Header["Idempotency-Key"] = []string{key}
			wantProblem(t, serve(m.Handler(h), r), http.StatusBadRequest, middleware.ProblemMalformedKey)
		})
	}
	r := post("one", feature)
	r.Header.Add("Idempotency-Key", "two")
	wantProblem(t, serve(m.Handler(h), r), http.StatusBadRequest, middleware.ProblemMalformedKey)
	if h.total.Load() != 0 {
		t.Fatalf("the handler ran %d times for malformed keys", h.total.Load())
	}
	if st := store.Stats(); st.Entries != 0 {
		t.Fatalf("malformed keys left %d entries in the store", st.Entries)
	}
}

func TestBodyTooLarge(t *testing.T) {
	h := newCounter()
	store := new(memstore.Store)
	m := newMiddleware(t, store, middleware.Config{MaxBodyBytes: 64})
	big := strings.Repeat("x", 65)
	// Declared too large.
	wantProblem(t, serve(m.Handler(h), post("k1", big)), http.StatusRequestEntityTooLarge, middleware.ProblemBodyTooLarge)
	// Too large without a declared length (chunked).
	r := post("k1", "")
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(big)), -1
	wantProblem(t, serve(m.Handler(h), r), http.StatusRequestEntityTooLarge, middleware.ProblemBodyTooLarge)
	// Exactly at the limit is fine, and the key was left usable.
	if w := serve(m.Handler(h), post("k1", big[:64])); w.Code != http.StatusCreated {
		t.Fatalf("a body at the limit with the same key: %d, want 201", w.Code)
	}
	if h.total.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", h.total.Load())
	}
}

func TestTruncatedBodyLeavesKeyUsable(t *testing.T) {
	h := newCounter()
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	r := post("k1", "")
	r.Body, r.ContentLength = io.NopCloser(iotest.ErrReader(io.ErrUnexpectedEOF)), -1 // chunked, failing
	wantProblem(t, serve(m.Handler(h), r), http.StatusRequestTimeout, middleware.ProblemBodyUnreadable)
	r = post("k1", "")
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(feature[:20]), iotest.ErrReader(io.ErrUnexpectedEOF)))
	r.ContentLength = int64(len(feature)) // declared, then cut short
	wantProblem(t, serve(m.Handler(h), r), http.StatusRequestTimeout, middleware.ProblemBodyUnreadable)
	if w := serve(m.Handler(h), post("k1", feature)); w.Code != http.StatusCreated {
		t.Fatalf("retry with the whole body: %d, want 201", w.Code)
	}
	if h.total.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", h.total.Load())
	}
}

func TestStoreUnavailable(t *testing.T) {
	for name, store := range map[string]*failingStore{
		"failing": {err: errors.New("connection refused")},
		"slow":    {block: true},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newCounter()
				var ev events
				m := newMiddleware(t, store, middleware.Config{StoreTimeout: 300 * time.Millisecond, RetryAfter: 2 * time.Second, Observer: ev.observe})
				start := time.Now()
				w := serve(m.Handler(h), post("k1", feature))
				wantProblem(t, w, http.StatusServiceUnavailable, middleware.ProblemStoreDown)
				if ra := w.Header().Get("Retry-After"); ra != "2" {
					t.Errorf("Retry-After = %q, want 2", ra)
				}
				if d := time.Since(start); d > 300*time.Millisecond {
					t.Errorf("answered after %v, past the 300ms store timeout", d)
				}
				if h.total.Load() != 0 {
					t.Fatal("the handler ran without a claim (fail open)")
				}
				if got := ev.outcomes(); !slices.Equal(got, []middleware.Outcome{middleware.StoreError}) {
					t.Errorf("outcomes %v, want [store_error]", got)
				}
				// A claim that failed, however it failed, may have acquired
				// the key: its release by its token is tried in the
				// background at once, and again until the lease it would
				// have started ends, then given up, here where the store
				// never answers. It is logged, not counted as a release
				// given up: the claim may never have reached the store.
				calls := store.calls.Load()
				if err := m.Shutdown(context.Background()); err != nil {
					t.Errorf("Shutdown = %v, want nil: an uncertain claim's release given up is no release lost", err)
				}
				if n := store.calls.Load() - calls; n < 1 {
					t.Errorf("the store saw %d calls after the request; want the uncertain claim's release tried", n)
				}
			})
		})
	}
}

func TestFirstCallThenReplay(t *testing.T) {
	h := newCounter()
	var ev events
	m := newMiddleware(t, new(memstore.Store), middleware.Config{Observer: ev.observe})
	first := serve(m.Handler(h), post("k1", feature))
	if first.Code != http.StatusCreated {
		t.Fatalf("first call: %d %s", first.Code, first.Body)
	}
	if first.Header().Get("Idempotent-Replayed") != "" {
		t.Error("the first response is marked as a replay")
	}
	for range 3 {
		again := serve(m.Handler(h), post("k1", feature))
		equalBodies(t, first, again)
		if again.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay lacks Idempotent-Replayed: true")
		}
		for _, name := range []string{"Content-Type", "Location"} {
			if got, want := again.Header().Get(name), first.Header().Get(name); got != want {
				t.Errorf("replayed %s = %q, want %q", name, got, want)
			}
		}
		for _, name := range []string{"Set-Cookie", "X-Not-Allowed"} {
			if got := again.Header().Get(name); got != "" {
				t.Errorf("replay carries %s: %q; only allow-listed headers may be replayed", name, got)
			}
		}
	}
	if h.total.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", h.total.Load())
	}
	want := []middleware.Outcome{middleware.Executed, middleware.Replayed, middleware.Replayed, middleware.Replayed}
	if got := ev.outcomes(); !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

func TestReplayHeadersConfigurable(t *testing.T) {
	if _, err := middleware.New(new(memstore.Store), middleware.Config{ReplayHeaders: []string{"set-cookie"}}); err == nil {
		t.Error("New accepted Set-Cookie as a replay header")
	}
	if _, err := middleware.New(new(memstore.Store), middleware.Config{ReplayHeaders: []string{"Authorization"}}); err == nil {
		t.Error("New accepted Authorization as a replay header")
	}
	h := newCounter()
	m := newMiddleware(t, new(memstore.Store), middleware.Config{ReplayHeaders: []string{"x-not-allowed"}})
	serve(m.Handler(h), post("k1", feature))
	again := serve(m.Handler(h), post("k1", feature))
	if again.Header().Get("X-Not-Allowed") != "1" || again.Header().Get("Location") != "" {
		t.Errorf("replayed headers %v, want X-Not-Allowed only", again.Header())
	}
}

func TestInFlightConflict(t *testing.T) {
	store := new(memstore.Store)
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "done")
	})
	m := newMiddleware(t, store, middleware.Config{RetryAfter: 3 * time.Second})
	firstDone := make(chan *httptest.ResponseRecorder)
	go func() { firstDone <- serve(m.Handler(slow), post("k1", feature)) }()
	<-entered
	w := serve(m.Handler(slow), post("k1", feature))
	wantProblem(t, w, http.StatusConflict, middleware.ProblemInFlight)
	// The holder's remaining lease (about 30 s), capped at Lease/6 (5 s);
	// Config.RetryAfter (3 s) is the floor. See
	// TestInFlightRetryAfterFollowsLease.
	if w.Header().Get("Retry-After") != "5" {
		t.Errorf("409 Retry-After = %q, want 5", w.Header().Get("Retry-After"))
	}
	// A different payload under the running key is a mismatch, not a conflict.
	wantProblem(t, serve(m.Handler(slow), post("k1", `{"other":1}`)), http.StatusUnprocessableEntity, middleware.ProblemKeyReused)
	close(release)
	first := <-firstDone
	equalBodies(t, first, serve(m.Handler(slow), post("k1", feature)))
}

func TestWaitInFlightReplays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * time.Second)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, "done")
		})
		m := newMiddleware(t, new(memstore.Store), middleware.Config{WaitInFlight: 5 * time.Second})
		first := make(chan *httptest.ResponseRecorder)
		go func() { first <- serve(m.Handler(h), post("k1", feature)) }()
		time.Sleep(time.Second)
		dup := serve(m.Handler(h), post("k1", feature)) // waits for the original
		orig := <-first
		equalBodies(t, orig, dup)
		if dup.Header().Get("Idempotent-Replayed") != "true" {
			t.Error("the waiting duplicate was not answered with a replay")
		}

		// A wait that runs out answers 409.
		short := newMiddleware(t, new(memstore.Store), middleware.Config{WaitInFlight: 500 * time.Millisecond})
		go func() { first <- serve(short.Handler(h), post("k2", feature)) }()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		wantProblem(t, serve(short.Handler(h), post("k2", feature)), http.StatusConflict, middleware.ProblemInFlight)
		if d := time.Since(start); d < 500*time.Millisecond || d > 600*time.Millisecond {
			t.Errorf("gave up after %v, want about the 500ms wait", d)
		}
		<-first
	})
}

func TestKeyReusedWithDifferentPayload(t *testing.T) {
	h := newCounter()
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	serve(m.Handler(h), post("k1", feature))
	wantProblem(t, serve(m.Handler(h), post("k1", strings.Replace(feature, "13.4", "13.5", 1))), http.StatusUnprocessableEntity, middleware.ProblemKeyReused)
	// The same body under another query is a different request.
	r := post("k1", feature)
	r.URL.RawQuery = "dry-run=1"
	wantProblem(t, serve(m.Handler(h), r), http.StatusUnprocessableEntity, middleware.ProblemKeyReused)
	// The same body on another method or path is another scope: it runs.
	r = post("k1", feature)
	r.URL.Path = "/other"
	if w := serve(m.Handler(h), r); w.Code != http.StatusCreated {
		t.Fatalf("same key on another path: %d, want a fresh 201", w.Code)
	}
	if h.total.Load() != 2 {
		t.Fatalf("handler ran %d times, want 2", h.total.Load())
	}
}

func TestCanonicalJSONFingerprint(t *testing.T) {
	reordered := `{ "properties": {"name":"a"}, "geometry": {"coordinates":[13.40,52.5],"type":"Point"}, "id":"f1", "type":"Feature" }`
	for _, canonical := range []bool{false, true} {
		h := newCounter()
		m := newMiddleware(t, new(memstore.Store), middleware.Config{CanonicalJSON: canonical})
		first := serve(m.Handler(h), post("k1", feature))
		again := serve(m.Handler(h), post("k1", reordered))
		if canonical {
			equalBodies(t, first, again)
		} else {
			wantProblem(t, again, http.StatusUnprocessableEntity, middleware.ProblemKeyReused)
		}
		// A real change is a mismatch either way.
		wantProblem(t, serve(m.Handler(h), post("k1", strings.Replace(feature, `"a"`, `"b"`, 1))), http.StatusUnprocessableEntity, middleware.ProblemKeyReused)
	}
}

func TestRetryableAnswersReleaseTheClaim(t *testing.T) {
	for _, status := range []int{500, 502, 503, 504, 408, 429} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			h := newCounter()
			h.status = status
			var ev events
			m := newMiddleware(t, new(memstore.Store), middleware.Config{Observer: ev.observe})
			for i := range 3 {
				if w := serve(m.Handler(h), post("k1", feature)); w.Code != status {
					t.Fatalf("attempt %d: %d, want the handler's %d", i, w.Code, status)
				}
			}
			h.status = http.StatusCreated
			if w := serve(m.Handler(h), post("k1", feature)); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("after the failures: %d replayed=%q, want a fresh 201", w.Code, w.Header().Get("Idempotent-Replayed"))
			}
			if h.total.Load() != 4 {
				t.Fatalf("handler ran %d times, want 4 (each retry runs again)", h.total.Load())
			}
			if got := ev.outcomes(); got[0] != middleware.Released || got[3] != middleware.Executed {
				t.Errorf("outcomes %v", got)
			}
		})
	}
	// Other client errors are final answers: recorded and replayed.
	for _, status := range []int{400, 404, 409, 410} {
		h := newCounter()
		h.status = status
		m := newMiddleware(t, new(memstore.Store), middleware.Config{})
		serve(m.Handler(h), post("k1", feature))
		if w := serve(m.Handler(h), post("k1", feature)); w.Code != status || w.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("%d: retry got %d replayed=%q, want the recorded %d", status, w.Code, w.Header().Get("Idempotent-Replayed"), status)
		}
	}
}

func TestPanicReleasesTheClaim(t *testing.T) {
	store := &spyStore{}
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the handler's panic to propagate", p)
			}
		}()
		serve(m.Handler(boom), post("k1", feature))
	}()
	if store.releases.Load() != 1 {
		t.Fatalf("releases = %d, want 1", store.releases.Load())
	}
	if got := ev.outcomes(); !slices.Equal(got, []middleware.Outcome{middleware.Released}) {
		t.Errorf("outcomes %v, want [released]", got)
	}
	h := newCounter()
	if w := serve(m.Handler(h), post("k1", feature)); w.Code != http.StatusCreated {
		t.Fatalf("retry after the panic: %d, want 201", w.Code)
	}
}

func TestLeaseIsRenewedWhileHandlerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &spyStore{}
		m := newMiddleware(t, store, middleware.Config{Lease: 3 * time.Second})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(10 * time.Second) // far past the 3s lease
			w.WriteHeader(http.StatusCreated)
		})
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- serve(m.Handler(h), post("k1", feature)) }()
		for range 3 {
			time.Sleep(3 * time.Second)
			wantProblem(t, serve(m.Handler(h), post("k1", feature)), http.StatusConflict, middleware.ProblemInFlight)
		}
		if w := <-done; w.Code != http.StatusCreated {
			t.Fatalf("slow handler: %d", w.Code)
		}
		if n := store.extends.Load(); n < 9 {
			t.Errorf("%d extensions over 10s with a 3s lease, want one every second", n)
		}
		synctest.Wait()
		n := store.extends.Load()
		time.Sleep(10 * time.Second)
		if store.extends.Load() != n {
			t.Error("the lease is still renewed after the handler returned")
		}
	})
}

// A handler whose lease is lost (here: renewals that never reach the store)
// must not overwrite the record of the request that took its key over.
func TestLateCompletionIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &spyStore{extendNoop: true}
		var ev events
		m := newMiddleware(t, store, middleware.Config{Lease: 3 * time.Second, Observer: ev.observe})
		var calls atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := calls.Add(1)
			if n == 1 {
				time.Sleep(10 * time.Second)
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "run %d", n)
		})
		first := make(chan *httptest.ResponseRecorder)
		go func() { first <- serve(m.Handler(h), post("k1", feature)) }()
		time.Sleep(m.StoreLease() + time.Second) // the un-renewed lease has expired in the store
		second := serve(m.Handler(h), post("k1", feature))
		if second.Body.String() != "run 2" {
			t.Fatalf("takeover: %d %q", second.Code, second.Body)
		}
		<-first
		replay := serve(m.Handler(h), post("k1", feature))
		if replay.Body.String() != "run 2" {
			t.Fatalf("replay after the late completion: %q, want the takeover's record", replay.Body)
		}
		got := ev.outcomes()
		if !slices.Contains(got, middleware.LeaseLost) {
			t.Errorf("outcomes %v, want one lease_lost", got)
		}
		if !ev.all[0].TookOver {
			t.Errorf("the takeover's event does not report TookOver: %+v", ev.all[0])
		}
	})
}

func TestLostLeaseCancelsHandlerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &spyStore{extendLost: true}
		m := newMiddleware(t, store, middleware.Config{Lease: 3 * time.Second})
		var cause error
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			cause = context.Cause(r.Context())
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		serve(m.Handler(h), post("k1", feature))
		if !errors.Is(cause, keystore.ErrLeaseLost) {
			t.Fatalf("handler context cause = %v, want keystore.ErrLeaseLost", cause)
		}
	})
}

func TestRecordWrittenAfterClientHangsUp(t *testing.T) {
	store := new(memstore.Store)
	m := newMiddleware(t, store, middleware.Config{})
	gone := make(chan struct{})
	serverCtx := make(chan context.Context, 1) // the server's request context: the handler's no longer ends when the client leaves
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-(<-serverCtx).Done() // the client has hung up
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "stored anyway")
		close(gone)
	})
	wrapped := m.Handler(h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case serverCtx <- r.Context():
		default:
		}
		wrapped.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
	req.Header.Set("Idempotency-Key", "k1")
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := srv.Client().Do(req); err == nil {
		t.Fatal("the canceled request succeeded")
	}
	<-gone
	// The retry replays what the handler wrote after the client left.
	var resp *http.Response
	for range 100 { // the record is written just after the handler returns
		r2, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
		r2.Header.Set("Idempotency-Key", "k1")
		var err error
		if resp, err = srv.Client().Do(r2); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusConflict {
			break
		}
		resp.Body.Close()
		time.Sleep(10 * time.Millisecond)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != "stored anyway" || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %q replayed=%q, want the recorded 201", resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"))
	}
}

func TestResponseTooLargeIsRecordedAsTerminal(t *testing.T) {
	h := newCounter()
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(httptest.NewRecorder(), r)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, strings.Repeat("x", 1000))
		_, _ = io.WriteString(w, strings.Repeat("y", 1000))
	})
	m := newMiddleware(t, new(memstore.Store), middleware.Config{MaxRecordBytes: 1500})
	first := serve(m.Handler(big), post("k1", feature))
	if first.Code != http.StatusOK || first.Body.Len() != 2000 {
		t.Fatalf("first call: %d, %d bytes; want the whole 2000-byte response", first.Code, first.Body.Len())
	}
	again := serve(m.Handler(big), post("k1", feature))
	wantProblem(t, again, http.StatusOK, middleware.ProblemNotRecorded)
	if again.Header().Get("Idempotent-Replayed") != "true" {
		t.Error("the too-large replay is not marked as a replay")
	}
	if h.total.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1: a too-large response must not be re-executed", h.total.Load())
	}
}

type teapotError struct{}

func (teapotError) Error() string   { return "teapot" }
func (teapotError) HTTPStatus() int { return http.StatusUnsupportedMediaType }
func (teapotError) ProblemJSON() []byte {
	return []byte(`{"type":"urn:x","title":"t","status":415,"detail":"d"}`)
}

func TestValidator(t *testing.T) {
	h := newCounter()
	var seen []string
	v := middleware.ValidatorFunc(func(r *http.Request, body []byte) error {
		seen = append(seen, string(body))
		switch {
		case strings.Contains(string(body), "bad"):
			return errors.New("the body says bad")
		case strings.Contains(string(body), "teapot"):
			return fmt.Errorf("wrapped: %w", teapotError{})
		}
		return nil
	})
	store := &spyStore{}
	m := newMiddleware(t, store, middleware.Config{Validator: v})
	for range 2 {
		p := wantProblem(t, serve(m.Handler(h), post("k1", `{"bad":1}`)), http.StatusUnprocessableEntity, middleware.ProblemInvalid)
		if p.Detail != "the body says bad" {
			t.Errorf("detail %q", p.Detail)
		}
	}
	if len(seen) != 2 {
		t.Errorf("validator ran %d times, want twice: its answer is not recorded, so a retry is validated again", len(seen))
	}
	if n := store.completes.Load(); n != 0 {
		t.Errorf("the validator's answer was recorded (%d Completes), want it released", n)
	}
	w := serve(m.Handler(h), post("k2", `"teapot"`))
	if w.Code != http.StatusUnsupportedMediaType || !strings.Contains(w.Body.String(), "urn:x") {
		t.Errorf("HTTPProblem answer: %d %s", w.Code, w.Body)
	}
	if h.total.Load() != 0 {
		t.Fatal("the handler ran for an invalid body")
	}
	if w := serve(m.Handler(h), post("k3", feature)); w.Code != http.StatusCreated {
		t.Fatalf("valid body: %d", w.Code)
	}
}

// The validator runs after the claim: a duplicate of an invalid request
// arriving while it is being validated sees the key in flight.
func TestClaimPrecedesValidation(t *testing.T) {
	store := new(memstore.Store)
	var state keystore.State
	var m *middleware.Middleware
	v := middleware.ValidatorFunc(func(r *http.Request, body []byte) error {
		hold, ok := middleware.HoldFromContext(r.Context())
		if !ok {
			t.Fatal("validator ran without a hold in its context")
		}
		c, err := testkit.Claim(r.Context(), store, hold.Key, keystore.Fingerprint{}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		state = c.State
		return nil
	})
	m = newMiddleware(t, store, middleware.Config{Validator: v})
	serve(m.Handler(newCounter()), post("k1", feature))
	if state != keystore.InFlight {
		t.Fatalf("during validation the key was %v, want in flight", state)
	}
}

func TestHandlerSeesItsHold(t *testing.T) {
	store := &spyStore{}
	var hold *keystore.Hold
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ok bool
		if hold, ok = middleware.HoldFromContext(r.Context()); !ok {
			t.Fatal("no hold in the handler's context")
		}
		// Record the response itself, as a transactional store would.
		rec := record.Record{StatusCode: http.StatusCreated, Body: []byte("self-recorded"),
			Header: http.Header{"Set-Cookie": {"session=1"}, "Location": {"/f1"}}}
		if err := store.Store.Complete(r.Context(), hold.Key, hold.Token, record.Append(nil, rec), hold.Retention); err != nil {
			t.Fatal(err)
		}
		hold.MarkCompleted()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "self-recorded")
	})
	m := newMiddleware(t, store, middleware.Config{Retention: time.Hour})
	serve(m.Handler(h), post("k1", feature))
	if w := serve(m.Handler(h), post("k1", feature)); w.Header().Get("Set-Cookie") != "" || w.Header().Get("Location") != "/f1" {
		t.Errorf("replay of a self-recorded response: headers %v; want Location, and never Set-Cookie", w.Header())
	}
	if hold.Key != middleware.StoreKey("POST /features", "k1") || hold.Token == 0 || hold.Retention != time.Hour {
		t.Errorf("hold = %+v", hold)
	}
	if store.completes.Load() != 0 || store.releases.Load() != 0 {
		t.Errorf("the middleware completed %d / released %d times after the handler marked its hold completed",
			store.completes.Load(), store.releases.Load())
	}
	if w := serve(m.Handler(h), post("k1", feature)); w.Body.String() != "self-recorded" || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %q", w.Body)
	}
}

func TestScopeSeparatesTenants(t *testing.T) {
	h := newCounter()
	m := newMiddleware(t, new(memstore.Store), middleware.Config{
		Scope: func(r *http.Request) string { return r.Header.Get("X-Tenant") + " " + r.URL.Path },
	})
	bodies := map[string]string{}
	for _, tenant := range []string{"alice", "bob", "alice"} {
		r := post("shared-key", feature)
		r.Header.Set("X-Tenant", tenant)
		w := serve(m.Handler(h), r)
		if prev, ok := bodies[tenant]; ok && prev != w.Body.String() {
			t.Errorf("%s's replay differs from its first response", tenant)
		}
		bodies[tenant] = w.Body.String()
	}
	if bodies["alice"] == bodies["bob"] {
		t.Fatal("bob was answered with alice's response")
	}
	if h.total.Load() != 2 {
		t.Fatalf("handler ran %d times, want once per tenant", h.total.Load())
	}
}

// A Complete that fails within the request is reported (store_error, with
// its error), and then retried in the background, while the lease is
// renewed, until the lease may have ended: never past it.
func TestCompletionFailureIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &spyStore{completeErr: errors.New("network down")}
		var ev events
		m := newMiddleware(t, store, middleware.Config{Lease: 3 * time.Second, Observer: ev.observe})
		w := serve(m.Handler(newCounter()), post("k1", feature))
		if w.Code != http.StatusCreated {
			t.Fatalf("%d: the handler's answer must still reach the client", w.Code)
		}
		if store.completes.Load() != 1 {
			t.Errorf("Complete tried %d times within the request, want 1", store.completes.Load())
		}
		if got := ev.outcomes(); !slices.Equal(got, []middleware.Outcome{middleware.StoreError}) || ev.all[0].Err == nil {
			t.Errorf("events %+v, want one store_error with its error", ev.all)
		}
		start := time.Now()
		var se *middleware.ShutdownError
		if err := m.Shutdown(context.Background()); !errors.As(err, &se) || se.Records != 1 || se.Releases != 0 || se.Pending != 0 {
			t.Fatalf("Shutdown = %v, want a *ShutdownError naming the one record given up", err)
		}
		// The store extends the lease but refuses every record: the
		// background renews for one more lease, tries until the store's
		// lease then granted ends, then gives up, so the key is not blocked
		// for ever.
		if d := time.Since(start); d > 3*time.Second+m.StoreLease() {
			t.Errorf("background work lasted %v, want at most Lease + StoreLease (%v)", d, 3*time.Second+m.StoreLease())
		}
		if n := store.completes.Load(); n < 5 {
			t.Errorf("Complete tried %d times in all, want it retried in the background", n)
		}
		if n := store.extends.Load(); n == 0 {
			t.Error("the lease was not extended while the record was retried")
		}
		time.Sleep(3 * time.Second)
		if c, err := testkit.Claim(context.Background(), store, ev.all[0].Key, keystore.Fingerprint{}, time.Second); err != nil || !c.Acquired {
			t.Errorf("after the background gave up and a lease passed: claim %+v, %v; want the key free", c, err)
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := middleware.New(nil, middleware.Config{}); err == nil {
		t.Error("New accepted a nil store")
	}
	for _, cfg := range []middleware.Config{
		{Lease: -time.Second}, {MaxBodyBytes: -1}, {WaitInFlight: -1}, {Lease: time.Millisecond},
	} {
		if _, err := middleware.New(new(memstore.Store), cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}

func TestProblemBodiesAreJSON(t *testing.T) {
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	w := serve(m.Handler(newCounter()), post("", feature))
	var doc map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, member := range []string{"type", "title", "status", "detail"} {
		if _, ok := doc[member]; !ok {
			t.Errorf("problem lacks %q: %v", member, doc)
		}
	}
}

// With CanonicalJSON, payloads that a float64 or a decoder's U+FFFD would
// merge are still told apart: reusing the key is a mismatch, never a replay.
func TestCanonicalJSONKeepsDistinctPayloadsApart(t *testing.T) {
	for _, pair := range [][2]string{
		{`{"to":9007199254740993}`, `{"to":9007199254740992}`},
		{`{"a":"\ud800"}`, `{"a":"\ufffd"}`},
	} {
		for _, order := range [][2]string{pair, {pair[1], pair[0]}} {
			h := newCounter()
			m := newMiddleware(t, new(memstore.Store), middleware.Config{CanonicalJSON: true})
			serve(m.Handler(h), post("k1", order[0]))
			wantProblem(t, serve(m.Handler(h), post("k1", order[1])), http.StatusUnprocessableEntity, middleware.ProblemKeyReused)
		}
	}
}
