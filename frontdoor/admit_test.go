package frontdoor

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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

func admitRequest(client, key string, size int, read *bool) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/features", nil)
	r.Body = countingBody{strings.NewReader(strings.Repeat(" ", size)), read}
	r.ContentLength = int64(size)
	r.Header.Set("Idempotency-Key", key)
	r.Header.Set("X-Client", client)
	return r
}

func serveRecorded(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// byHeader names a request's client by its X-Client header.
func byHeader(r *http.Request) string { return r.Header.Get("X-Client") }

// admitted is h, the idempotency middleware over store in front of g,
// behind a Door built from cfg.
func admitted(t *testing.T, cfg Config, store *memstore.Store, g http.Handler) (*Door, http.Handler) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := middleware.New(store, middleware.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return d, d.Handler(m.Handler(g))
}

// holding starts n requests of client through h and waits until each is
// in the handler.
func holding(t *testing.T, h http.Handler, g *gate, wg *sync.WaitGroup, client string, n, size int) {
	t.Helper()
	for i := range n {
		var read bool
		r := admitRequest(client, client+strconv.Itoa(i), size, &read)
		wg.Go(func() { serveRecorded(h, r) })
		<-g.entered
	}
}

// wantRefused checks that a request of client is answered status with
// type typ and a Retry-After of whole seconds, without a claim; with
// unread, without its body read either. It returns the answer.
func wantRefused(t *testing.T, h http.Handler, store *memstore.Store, client string, size, status int, typ string, unread bool) {
	t.Helper()
	entries := store.Stats().Entries
	var read bool
	w := serveRecorded(h, admitRequest(client, "refused-"+client, size, &read))
	var p struct{ Type, Title string }
	if err := json.Unmarshal(w.Body.Bytes(), &p); w.Code != status || err != nil || p.Type != typ {
		t.Fatalf("answered %d %s, want %d %s", w.Code, w.Body, status, typ)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: Content-Type %q, want application/problem+json", p.Title, ct)
	}
	if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("%s: Retry-After %q, want whole seconds >= 1", p.Title, w.Header().Get("Retry-After"))
	}
	if unread && read {
		t.Errorf("%s: the body was read before the refusal", p.Title)
	}
	if got := store.Stats().Entries; got != entries {
		t.Errorf("%s: the store holds %d entries, had %d: something was claimed", p.Title, got, entries)
	}
}

// The work slots are bounded: past MaxInFlight, 503 server-busy before
// any claim. A client may hold more than its quarter only while the
// server holds less than three quarters: then it gets 429 while another
// client is still admitted.
func TestDoorBoundsWorkSlots(t *testing.T) {
	store, g := new(memstore.Store), newGate()
	d, h := admitted(t, Config{MaxInFlight: 8, Client: byHeader, Wait: 50 * time.Millisecond}, store, g)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(g.release)

	holding(t, h, g, &wg, "a", 5, 10) // more than its quarter of 8, while the server is not crowded
	holding(t, h, g, &wg, "b", 1, 10) // three quarters of 8
	wantRefused(t, h, store, "a", 10, http.StatusTooManyRequests, ProblemClientBusy, false)
	holding(t, h, g, &wg, "c", 2, 10) // the last quarter is for the others
	wantRefused(t, h, store, "d", 10, http.StatusServiceUnavailable, ProblemServerBusy, false)
	if s := d.Stats(); s.Slots != 8 || s.RefusedClient != 1 || s.RefusedBusy != 1 {
		t.Errorf("Stats %+v, want 8 slots held, 1 refused 429 and 1 refused 503", s)
	}
}

// The bytes held are bounded, and large bodies together may hold at most
// three quarters of them, so a small request still gets in; a request
// refused for bytes is refused before its body is read.
func TestDoorBoundsBytes(t *testing.T) {
	store, g := new(memstore.Store), newGate()
	const mib = 1 << 20
	d, h := admitted(t, Config{MaxBytes: 8 * mib, Client: byHeader, Wait: 50 * time.Millisecond}, store, g)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(g.release)

	holding(t, h, g, &wg, "a", 4, mib)
	holding(t, h, g, &wg, "b", 2, mib) // 6 MiB of large bodies: three quarters
	wantRefused(t, h, store, "a", 10, http.StatusTooManyRequests, ProblemClientBusy, true)
	wantRefused(t, h, store, "c", mib, http.StatusServiceUnavailable, ProblemServerBusy, true)
	holding(t, h, g, &wg, "d", 1, 1000) // a small body still gets in
	if s := d.Stats(); s.Slots != 7 || s.Bytes != 6*mib+1000 {
		t.Errorf("Stats %+v, want 7 slots holding 6 MiB + 1000 bytes", s)
	}
}

// The Door's default client is the remote address, an IPv6 /64 as one:
// addresses of one /64 share one client's quarter, so that a subscriber
// cannot take every slot by sending from 2^64 addresses.
func TestDoorCountsAnIPv6SubnetAsOneClient(t *testing.T) {
	store, g := new(memstore.Store), newGate()
	_, h := admitted(t, Config{MaxInFlight: 8, Wait: 50 * time.Millisecond}, store, g)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(g.release)
	from := func(remote, key string) *http.Request {
		var read bool
		r := admitRequest("", key, 10, &read)
		r.RemoteAddr = remote
		return r
	}
	hold := func(r *http.Request) {
		wg.Go(func() { serveRecorded(h, r) })
		<-g.entered
	}
	hold(from("192.0.2.1:4000", "other")) // another client holds a slot
	for i := range 5 {                    // three quarters of 8 in all, five from addresses of one /64
		hold(from(fmt.Sprintf("[2001:db8:1:2::%x]:4000", i+1), fmt.Sprint("k", i)))
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- serveRecorded(h, from("[2001:db8:1:2::99]:4000", "k99")) }()
	select {
	case w := <-done:
		if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), ProblemClientBusy) {
			t.Errorf("a sixth request from the same /64: %d %s, want 429 %s", w.Code, w.Body, ProblemClientBusy)
		}
	case <-g.entered:
		t.Fatal("a sixth request from the same /64 was admitted; want 429 client-busy")
	}
}

// sleeper is a handler that takes the time its request's X-Take header
// says.
func sleeper(w http.ResponseWriter, r *http.Request) {
	if d, err := time.ParseDuration(r.Header.Get("X-Take")); err == nil {
		time.Sleep(d)
	}
	w.WriteHeader(http.StatusCreated)
}

func timedRequest(client, take string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/features", nil)
	r.Header.Set("X-Client", client)
	r.Header.Set("X-Take", take)
	return r
}

// A refusal's Retry-After is when a work slot really frees: waiting that
// long, the retry is admitted, and it is not much longer than needed; not
// the moving average of the slots' durations, which says 10 s when
// requests take 10 s but the first in flight ends in 5.5 s, and 50 ms when
// requests that took 50 ms have been running for 4 s. (Bodies arriving:
// TestDoorRetryAfterIsTrue.)
func TestDoorRetryAfterIsWhenASlotFrees(t *testing.T) {
	newDoor := func(t *testing.T) http.Handler {
		d, err := New(Config{MaxInFlight: 4, Client: byHeader, Wait: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return d.Handler(http.HandlerFunc(sleeper))
	}
	// past sets the moving average: 64 requests that took take each.
	past := func(h http.Handler, take time.Duration) {
		for range 64 {
			serveRecorded(h, timedRequest("past", take.String()))
		}
	}
	retryAfter := func(t *testing.T, h http.Handler) int {
		t.Helper()
		w := serveRecorded(h, timedRequest("other", "0s"))
		ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
		if w.Code != http.StatusServiceUnavailable || err != nil {
			t.Fatalf("answered %d with Retry-After %q, want 503 with whole seconds", w.Code, w.Header().Get("Retry-After"))
		}
		return ra
	}

	t.Run("requests that take 10 s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newDoor(t)
			past(h, 10*time.Second)
			var wg sync.WaitGroup
			for i := range 4 { // one a second: the first ends 10 s after it began
				wg.Go(func() { serveRecorded(h, timedRequest("long"+strconv.Itoa(i), "10s")) })
				time.Sleep(time.Second)
			}
			time.Sleep(500 * time.Millisecond) // 4.5 s after the first began
			ra := retryAfter(t, h)
			if ra < 5 || ra > 6 {
				t.Errorf("Retry-After %d s, want 6 s: the first request in flight ends 5.5 s from now", ra)
			}
			time.Sleep(time.Duration(ra) * time.Second)
			synctest.Wait()
			if w := serveRecorded(h, timedRequest("late", "0s")); w.Code != http.StatusCreated {
				t.Errorf("retried after Retry-After %d s: answered %d, want 201", ra, w.Code)
			}
			wg.Wait()
		})
	})

	t.Run("requests running longer than requests take", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newDoor(t)
			past(h, 50*time.Millisecond)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() { serveRecorded(h, timedRequest("long"+strconv.Itoa(i), "30s")) })
			}
			synctest.Wait()
			time.Sleep(4*time.Second - time.Millisecond) // 4 s once the refused request has waited its millisecond
			// Nothing says when they end: they are guessed to run as long
			// again as they have, not to end within the 50 ms requests take.
			if ra := retryAfter(t, h); ra != 4 {
				t.Errorf("Retry-After %d s, want 4 s: as long again as the requests in flight have run", ra)
			}
			wg.Wait()
		})
	})
}
