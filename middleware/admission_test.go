package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// gate is a handler that holds every request until released.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1000), release: make(chan struct{})} }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	g.entered <- struct{}{}
	<-g.release
	w.WriteHeader(http.StatusCreated)
}

// countingBody records whether anything read it.
type countingBody struct {
	io.Reader
	read *bool
}

func (b countingBody) Read(p []byte) (int, error) { *b.read = true; return b.Reader.Read(p) }
func (countingBody) Close() error                 { return nil }

func admissionRequest(client, key string, size int, read *bool) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/features", nil)
	r.Body = countingBody{strings.NewReader(strings.Repeat(" ", size)), read}
	r.ContentLength = int64(size)
	r.Header.Set("Idempotency-Key", key)
	r.Header.Set("X-Client", client)
	return r
}

// holding starts n requests of client through h and waits until each is
// in the handler.
func holding(t *testing.T, h http.Handler, g *gate, wg *sync.WaitGroup, client string, n, size int) {
	t.Helper()
	for i := range n {
		wg.Add(1)
		var read bool
		r := admissionRequest(client, client+strconv.Itoa(i), size, &read)
		go func() { defer wg.Done(); serve(h, r) }()
		<-g.entered
	}
}

// wantRefused checks that r is answered status with type typ and a
// Retry-After, without its body read and without a claim.
func wantRefused(t *testing.T, h http.Handler, store *memstore.Store, client string, size, status int, typ string) {
	t.Helper()
	entries := store.Stats().Entries
	var read bool
	w := serve(h, admissionRequest(client, "refused-"+client, size, &read))
	p := wantProblem(t, w, status, typ)
	if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("%s: Retry-After %q, want whole seconds >= 1", p.Title, w.Header().Get("Retry-After"))
	}
	if read {
		t.Errorf("%s: the body was read before the refusal", p.Title)
	}
	if got := store.Stats().Entries; got != entries {
		t.Errorf("%s: the store holds %d entries, had %d: something was claimed", p.Title, got, entries)
	}
}

// The requests in flight are bounded: past MaxInFlight, 503 server-busy
// before the body is read and before any claim. A client may hold more
// than its quarter only while the server holds less than three quarters:
// then it gets 429 while another client is still admitted.
func TestAdmissionBoundsRequestsInFlight(t *testing.T) {
	store := new(memstore.Store)
	g := newGate()
	m := newMiddleware(t, store, middleware.Config{})
	a, err := middleware.NewAdmission(middleware.AdmissionConfig{
		MaxInFlight: 8,
		Client:      func(r *http.Request) string { return r.Header.Get("X-Client") },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler(m.Handler(g))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(g.release)

	holding(t, h, g, &wg, "a", 5, 10) // more than its quarter of 8, while the server is not crowded
	holding(t, h, g, &wg, "b", 1, 10) // three quarters of 8
	wantRefused(t, h, store, "a", 10, http.StatusTooManyRequests, middleware.ProblemClientBusy)
	holding(t, h, g, &wg, "c", 2, 10) // the last quarter is for the others
	wantRefused(t, h, store, "d", 10, http.StatusServiceUnavailable, middleware.ProblemServerBusy)
	if s := a.Stats(); s.InFlight != 8 || s.Refused != 2 {
		t.Errorf("Stats %+v, want 8 in flight and 2 refused", s)
	}
}

// The bytes in flight are bounded, and large bodies together may hold at
// most three quarters of them, so a small request still gets in.
func TestAdmissionBoundsBytesInFlight(t *testing.T) {
	store := new(memstore.Store)
	g := newGate()
	m := newMiddleware(t, store, middleware.Config{})
	const mib = 1 << 20
	a, err := middleware.NewAdmission(middleware.AdmissionConfig{
		MaxInFlightBytes: 8 * mib,
		Client:           func(r *http.Request) string { return r.Header.Get("X-Client") },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler(m.Handler(g))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(g.release)

	holding(t, h, g, &wg, "a", 4, mib)
	holding(t, h, g, &wg, "b", 2, mib) // 6 MiB of large bodies: three quarters
	wantRefused(t, h, store, "a", 10, http.StatusTooManyRequests, middleware.ProblemClientBusy)
	wantRefused(t, h, store, "c", mib, http.StatusServiceUnavailable, middleware.ProblemServerBusy)
	holding(t, h, g, &wg, "d", 1, 1000) // a small body still gets in
	if s := a.Stats(); s.InFlight != 7 || s.InFlightBytes != 6*mib+1000 {
		t.Errorf("Stats %+v, want 7 in flight holding 6 MiB + 1000 bytes", s)
	}
}

// cutRecorder is an AdmissionConfig.CutBody that records the keys of the
// requests it was asked to cut off, and cuts them unless their client's
// bodies are said to have arrived.
type cutRecorder struct {
	mu      sync.Mutex
	keys    []string
	arrived map[string]bool // by client: bodies that cannot be cut off
}

func (c *cutRecorder) cut(r *http.Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arrived[r.Header.Get("X-Client")] {
		return false
	}
	c.keys = append(c.keys, r.Header.Get("Idempotency-Key"))
	return true
}

func (c *cutRecorder) cuts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.keys...)
}

// cutAdmission is h behind the middleware over store, behind an Admission
// of 16 requests (2 cut off at once) whose CutBody is cr's.
func cutAdmission(t *testing.T, store *memstore.Store, cr *cutRecorder, h http.Handler) (*middleware.Admission, http.Handler) {
	t.Helper()
	a, err := middleware.NewAdmission(middleware.AdmissionConfig{
		MaxInFlight: 16,
		Client:      func(r *http.Request) string { return r.Header.Get("X-Client") },
		CutBody:     cr.cut,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, a.Handler(newMiddleware(t, store, middleware.Config{}).Handler(h))
}

// With CutBody, a request that finds the server full is admitted by
// cutting off the oldest body still arriving of the client that holds
// the most, at least two more than its own client (the next such client
// when that one's bodies have all arrived); everyone is refused once an
// eighth of MaxInFlight is cut off and not yet gone.
func TestAdmissionCutsTheBiggestHolder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		arrived  map[string]bool
		wantCuts []string
	}{
		{"oldest of the biggest", nil, []string{"a0", "a1"}},
		{"the next biggest when its bodies have arrived", map[string]bool{"a": true}, []string{"c0", "c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, g, cr := new(memstore.Store), newGate(), &cutRecorder{arrived: tc.arrived}
			a, h := cutAdmission(t, store, cr, g)
			var wg sync.WaitGroup
			defer wg.Wait()
			defer close(g.release)

			holding(t, h, g, &wg, "a", 10, 10) // while the server is not crowded
			holding(t, h, g, &wg, "b", 2, 10)
			holding(t, h, g, &wg, "c", 4, 10) // full: 16
			if cuts := cr.cuts(); len(cuts) != 0 {
				t.Fatalf("cut off %v before the server was full", cuts)
			}
			holding(t, h, g, &wg, "d", 1, 10) // holds nothing: room is made
			holding(t, h, g, &wg, "f", 1, 10) // again: the biggest still holds 2 more
			wantRefused(t, h, store, "e", 10, http.StatusServiceUnavailable, middleware.ProblemServerBusy)
			if cuts := cr.cuts(); !slices.Equal(cuts, tc.wantCuts) {
				t.Errorf("cut off %v, want %v", cuts, tc.wantCuts)
			}
			if s := a.Stats(); s.InFlight != 18 || s.Cut != 2 {
				t.Errorf("Stats %+v, want 18 in flight (16 and the 2 being cut off) and 2 cut", s)
			}
		})
	}
}

// Room is made down to even shares, no further: with 8 clients holding 2
// each, a newcomer gets a body of another cut off, but a client left
// holding 1 gets none cut for it (nobody holds 3); nor does a third
// newcomer while 2 are being cut off.
func TestAdmissionCutsDownToEvenShares(t *testing.T) {
	store, g, cr := new(memstore.Store), newGate(), &cutRecorder{}
	_, h := cutAdmission(t, store, cr, g)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(g.release)
	for i := range 8 {
		holding(t, h, g, &wg, "c"+strconv.Itoa(i), 2, 10)
	}
	holding(t, h, g, &wg, "y", 1, 10)
	wantRefused(t, h, store, "c0", 10, http.StatusServiceUnavailable, middleware.ProblemServerBusy) // holds 1 now
	holding(t, h, g, &wg, "z", 1, 10)
	wantRefused(t, h, store, "x", 10, http.StatusServiceUnavailable, middleware.ProblemServerBusy) // 2 being cut off
	if cuts := cr.cuts(); !slices.Equal(cuts, []string{"c00", "c10"}) {
		t.Errorf("cut off %v, want [c00 c10]: the oldest body of a client holding 2, for each newcomer", cuts)
	}
}
