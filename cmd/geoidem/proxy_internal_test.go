package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProxyConcurrentDuplicates runs the proxy's request path in process
// (for the race detector): concurrent duplicates of 16 keys reach the
// upstream once per key, and every duplicate ends with that answer, the
// forwarded Idempotency-Key included.
func TestProxyConcurrentDuplicates(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the duplicates overlap the first
		created(w)
	}))
	t.Cleanup(upstream.Close)
	c, code := parseProxyFlags([]string{"-upstream", upstream.URL, "-max-in-flight", "256"}, io.Discard)
	if c == nil {
		t.Fatalf("flags: exit %d", code)
	}
	p, err := newProxy(t.Context(), c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	srv := httptest.NewServer(p.handler)
	t.Cleanup(srv.Close)

	const keys, dups = 16, 8
	var wg sync.WaitGroup
	for k := range keys {
		for range dups {
			wg.Go(func() {
				key := fmt.Sprintf("dup-%d", k)
				for attempt := 0; ; attempt++ {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(pointFeature))
					req.Header.Set("Content-Type", "application/geo+json")
					req.Header.Set("Idempotency-Key", key)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					switch {
					case resp.StatusCode == http.StatusCreated:
						return
					case resp.StatusCode == http.StatusConflict && attempt < 200:
						time.Sleep(10 * time.Millisecond) // in flight: retry
					default:
						t.Errorf("%s: %d %s", key, resp.StatusCode, body)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if len(seen) != keys {
		t.Errorf("the upstream saw %d keys, want %d: %v", len(seen), keys, seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("key %s reached the upstream %d times, want once", k, n)
		}
	}
	m := new(strings.Builder)
	p.m.write(m)
	if !strings.Contains(m.String(), fmt.Sprintf(`geoidem_upstream_requests_total{result="answered"} %d`, keys)) {
		t.Errorf("metrics:\n%s", m)
	}
}
