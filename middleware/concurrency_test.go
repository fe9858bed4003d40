package middleware_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// 200 goroutines post the same key at once: the handler runs exactly once,
// and every caller gets either that execution's body or a 409.
func TestDuplicateStormExecutesOnce(t *testing.T) {
	h := newCounter()
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // keep the original in flight while duplicates arrive
		h.ServeHTTP(w, r)
	})
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	srv := httptest.NewServer(m.Handler(slow))
	defer srv.Close()
	client := srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 200

	const n = 200
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		mu     sync.Mutex
		bodies = map[string]int{}
		codes  = map[int]int{}
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
			req.Header.Set("Idempotency-Key", "storm")
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusCreated {
				bodies[string(body)]++
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := h.total.Load(); got != 1 {
		t.Fatalf("handler ran %d times for %d concurrent duplicates, want 1", got, n)
	}
	if len(bodies) != 1 || codes[http.StatusCreated]+codes[http.StatusConflict] != n {
		t.Fatalf("answers %v with %d distinct bodies; want only 201 (one body) and 409", codes, len(bodies))
	}
}

// A client that sends half its body and disconnects claims nothing: the
// retry with the same key runs the handler.
func TestClientDisconnectMidBody(t *testing.T) {
	h := newCounter()
	store := new(memstore.Store)
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
	srv := httptest.NewServer(m.Handler(h))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		len(feature), feature[:len(feature)/2])
	conn.Close()

	deadline := time.Now().Add(10 * time.Second)
	for len(ev.outcomes()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the server notices the hang-up on its own schedule
	}
	if got := ev.outcomes(); len(got) != 1 || got[0] != middleware.Rejected {
		t.Fatalf("outcomes after the disconnect: %v, want [rejected]", got)
	}
	if st := store.Stats(); st.Entries != 0 {
		t.Fatalf("the aborted request left %d entries", st.Entries)
	}

	conn, err = net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(feature), feature)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || h.total.Load() != 1 {
		t.Fatalf("retry: %d, handler runs %d; want 201 and 1", resp.StatusCode, h.total.Load())
	}
}
