package frontdoor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A client's share is kept while any request of its client is under the
// Door, even one that holds nothing: with the only work slot taken by
// another client, a request with an empty body waits for a slot holding no
// bytes; a second request of its client waits too and goes away. Its
// release must not forget the share the first still stands in: once the
// slot frees, the first is served (it found no share and panicked, with
// the Door's lock held, and the Door hung).
func TestShareKeptWhileItsClientWaits(t *testing.T) {
	d, err := New(Config{MaxInFlight: 1, Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	free := make(chan struct{})
	h := d.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.RemoteAddr == "127.0.10.2:1000" {
			<-free
		}
		w.WriteHeader(http.StatusCreated)
	}))
	held := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.held)
	}
	waitHeld := func(n int, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); held() != n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 10s: %s (%d requests under the Door, want %d)", what, held(), n)
			}
		}
	}
	serve := func(ctx context.Context, addr, body string) <-chan int {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/work", strings.NewReader(body))
		r.RemoteAddr = addr
		got := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got <- w.Code
		}()
		return got
	}

	other := serve(context.Background(), "127.0.10.2:1000", "{}")
	waitHeld(1, "another client in the only work slot")
	first := serve(context.Background(), "127.0.10.3:1000", "")
	waitHeld(2, "the empty body waiting for a slot")
	ctx, cancel := context.WithCancel(context.Background())
	second := serve(ctx, "127.0.10.3:1001", "")
	waitHeld(3, "its client's second request waiting too")
	cancel()
	<-second
	waitHeld(2, "the second request released")
	close(free)
	select {
	case code := <-first:
		if code != http.StatusCreated {
			t.Errorf("the first request, once the slot freed: %d, want 201", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first request was not served within 20 s of the slot freeing")
	}
	if code := <-other; code != http.StatusCreated {
		t.Errorf("the other client's request: %d, want 201", code)
	}
}
