package middleware_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// The {} flood of one client fills the store up to its headroom (a
// quarter of it), and then only its ClientKeys more, not the store: a
// second client's new keys still run (its first 20 at once: the bound,
// set here, is what a client may claim in a window under contention). The
// first client is told the truth: 429 client-full (its own bound, not the
// server's trouble: no 5xx to page anyone) with a Retry-After from when
// its window ends, not 1 s, and observers see Outcome Limited, not
// StoreError.
func TestOneClientCannotDenyAnother(t *testing.T) {
	store := memstore.New(memstore.Config{MaxEntries: 400, ClientKeys: 20, ClientWindow: time.Hour})
	var mu sync.Mutex
	outcomes := map[middleware.Outcome]int{}
	m := newMiddleware(t, store, middleware.Config{
		Client: func(r *http.Request) string { return r.Header.Get("X-Client") },
		Observer: func(ev middleware.Event) {
			mu.Lock()
			defer mu.Unlock()
			outcomes[ev.Outcome]++
		},
	})
	h := m.Handler(newCounter())
	send := func(client, key string) (int, string, string) {
		r := post(key, "{}")
		r.Header.Set("X-Client", client)
		w := serve(h, r)
		var p problemDoc
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		return w.Code, w.Header().Get("Retry-After"), p.Type
	}
	var last int
	var retryAfter, typ string
	start := time.Now()
	for i := range 400 {
		last, retryAfter, typ = send("attacker", "flood-"+strconv.Itoa(i))
	}
	// The window starts with the first key counted, under contention, so
	// the last refusal, sent later on a slow machine, may say a few
	// seconds less than the window: never more, and never less than the
	// window less the time since the flood started.
	window := int(time.Hour.Seconds())
	earliest := window - int(time.Since(start).Seconds()) - 1
	if ra, err := strconv.Atoi(retryAfter); last != http.StatusTooManyRequests || typ != middleware.ProblemClientFull || err != nil || ra > window || ra < earliest {
		t.Errorf("the flood's last request: %d %s Retry-After=%q, want 429 client-full with Retry-After in [%d, %d] (the end of its window)",
			last, typ, retryAfter, earliest, window)
	}
	mu.Lock()
	limited, storeErrors := outcomes[middleware.Limited], outcomes[middleware.StoreError]
	mu.Unlock()
	if limited == 0 || storeErrors != 0 {
		t.Errorf("the flood's refusals observed as %d Limited and %d StoreError, want every one Limited", limited, storeErrors)
	}
	for i := range 20 {
		if code, ra, typ := send("other", "new-"+strconv.Itoa(i)); code != http.StatusCreated {
			t.Fatalf("a second client's new key during the flood: %d %s Retry-After=%q, want 201", code, typ, ra)
		}
	}
}

// ingest201 answers 201 with a small JSON body, as an ingest handler does.
var ingest201 = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/features/f1")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"stored":["f1"]}`))
})

// sendAs posts a small valid feature under key for client (the remote
// address the Client function reads).
func sendAs(h http.Handler, client, key string) *httptest.ResponseRecorder {
	r := post(key, `{"type":"Feature","id":"`+key+`","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"n":1}}`)
	r.RemoteAddr = client + ":4000"
	return serve(h, r)
}

// The flip side of the client bound: the only sender of a receiver may
// use the whole store while no one else needs it. With the store sized
// for it (MaxEntries 140,000, every other limit the default), one
// address stores 100,000 keys without a refusal.
func TestLoneSenderUsesTheStore(t *testing.T) {
	store := memstore.New(memstore.Config{MaxEntries: 140_000})
	h := newMiddleware(t, store, middleware.Config{Client: middleware.RemoteClient}).Handler(ingest201)
	for i := range 100_000 {
		if w := sendAs(h, "192.0.2.1", "lone-"+strconv.Itoa(i)); w.Code != http.StatusCreated {
			t.Fatalf("the lone sender's key %d: %d %s", i+1, w.Code, w.Body.String())
		}
	}
	if st := store.Stats(); st.Entries != 100_000 || st.Refused != 0 {
		t.Fatalf("stats %+v, want 100000 entries and no refusal", st)
	}
}

// The store fill: 8 source addresses send 25 MB of small
// valid features, each a new key, on the memory store's defaults. A ninth
// address still gets 201.
func TestNinthAddressAfterEightFill(t *testing.T) {
	store := memstore.New(memstore.Config{})
	h := newMiddleware(t, store, middleware.Config{Client: middleware.RemoteClient}).Handler(ingest201)
	sent, created, refused := 0, 0, 0
	for i := 0; sent < 25_000_000; i++ {
		client := "198.51.100." + strconv.Itoa(1+i%8)
		key := "fill-" + strconv.Itoa(i)
		r := post(key, `{"type":"Feature","id":"`+key+`","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"n":1}}`)
		sent += int(r.ContentLength) + len(key)
		r.RemoteAddr = client + ":4000"
		switch w := serve(h, r); w.Code {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests: // each address past its bound
			refused++
		default:
			t.Fatalf("fill request %d: %d %s", i, w.Code, w.Body.String())
		}
	}
	t.Logf("8 addresses sent %d MB: %d keys stored, %d refused; store %+v", sent>>20, created, refused, store.Stats())
	for i := range 20 {
		if w := sendAs(h, "203.0.113.9", "ninth-"+strconv.Itoa(i)); w.Code != http.StatusCreated {
			t.Fatalf("the ninth address's key %d after the fill: %d %s Retry-After=%s", i+1, w.Code, w.Body.String(), w.Header().Get("Retry-After"))
		}
	}
}

// A store full for every client (no Config.Client, so no client's bound)
// is the server's trouble: 503 store-full with the Retry-After of its
// earliest retention, Outcome StoreError.
func TestFullStoreIs503(t *testing.T) {
	store := memstore.New(memstore.Config{MaxEntries: 10})
	var last middleware.Event
	h := newMiddleware(t, store, middleware.Config{Observer: func(ev middleware.Event) { last = ev }}).Handler(newCounter())
	var w *httptest.ResponseRecorder
	for i := range 11 {
		w = serve(h, post("full-"+strconv.Itoa(i), "{}"))
	}
	var p problemDoc
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	if w.Code != http.StatusServiceUnavailable || p.Type != middleware.ProblemStoreFull || w.Header().Get("Retry-After") == "" || last.Outcome != middleware.StoreError {
		t.Errorf("the 11th key in a store of 10: %d %s Retry-After=%q, Outcome %v; want 503 store-full with a Retry-After, Outcome StoreError",
			w.Code, p.Type, w.Header().Get("Retry-After"), last.Outcome)
	}
}
