package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProxyFrontDoor runs `geoidem proxy` with one work slot, behind the
// front door examples/ingest uses (its flags accepted): a body still
// arriving holds no work slot, so that a whole delivery from the same
// address beside it is forwarded and answered 201 at once; and /metrics
// shows the Door's decisions, the body arriving and no slot held.
func TestProxyFrontDoor(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		created(w)
	}))
	t.Cleanup(upstream.Close)
	url := startProxy(t, upstream.URL, "-max-in-flight", "1",
		"-trusted-proxies", "10.0.0.0/8", "-forwarded-header", "X-Forwarded-For", "-known-senders", "192.0.2.0/24",
		"-max-conns", "64", "-max-conns-per-host", "8", "-max-idle-conns", "32", "-min-body-rate", "-1") // no rate: the body arriving waits as long as the test needs

	// A body that has begun to arrive, and waits.
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nContent-Type: application/geo+json\r\nIdempotency-Key: slow-1\r\nContent-Length: %d\r\n\r\n%s", len(pointFeature), pointFeature[:10]); err != nil {
		t.Fatal(err)
	}
	metrics := func() string {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Wait for the proxy to see it arriving (the metric, polled for a minute).
	for i := 0; !strings.Contains(metrics(), "geoidem_frontdoor_bodies_arriving 1\n"); i++ {
		if i == 0 {
			defer func() {
				if t.Failed() {
					t.Logf("/metrics:\n%s", grepLines(metrics(), "geoidem_frontdoor"))
				}
			}()
		}
		if i == 600 {
			t.Fatal("the proxy's /metrics never showed the body arriving")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp, body := deliver(t, url, "whole-1", pointFeature); resp.StatusCode != http.StatusCreated {
		t.Errorf("a whole delivery beside a body arriving: %d %s, want 201", resp.StatusCode, body)
	}
	m := metrics()
	for _, want := range []string{
		"# TYPE geoidem_frontdoor_refused_total counter\n",
		`geoidem_frontdoor_refused_total{reason="server_busy"} 0` + "\n",
		"geoidem_frontdoor_slots_held 0\n",
		"geoidem_frontdoor_bodies_arriving 1\n",
		`geoidem_frontdoor_connections_closed_total{reason="host"} 0` + "\n",
		`geoidem_upstream_requests_total{result="answered"} 1` + "\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestProxyConnectionPool: a provider's pool of 16 connections from one
// address delivers 200 events through `geoidem proxy` with its defaults:
// none is reset, each is answered 201 and forwarded once.
func TestProxyConnectionPool(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		created(w)
	}))
	t.Cleanup(upstream.Close)
	url := startProxy(t, upstream.URL)
	const pool, events = 16, 200
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: pool, MaxIdleConnsPerHost: pool}, Timeout: time.Minute}
	t.Cleanup(c.CloseIdleConnections)
	statuses := make([]int, events)
	errs := make([]error, events)
	next := make(chan int)
	var wg sync.WaitGroup
	for range pool {
		wg.Go(func() {
			for i := range next {
				req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(pointFeature))
				req.Header.Set("Content-Type", "application/geo+json")
				req.Header.Set("Idempotency-Key", fmt.Sprint("pool-", i))
				resp, err := c.Do(req)
				if err != nil {
					errs[i] = err
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			}
		})
	}
	for i := range events {
		next <- i
	}
	close(next)
	wg.Wait()
	for i := range events {
		if errs[i] != nil || statuses[i] != http.StatusCreated {
			t.Errorf("event %d: %d %v, want 201", i, statuses[i], errs[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range events {
		if n := seen[fmt.Sprint("pool-", i)]; n != 1 {
			t.Errorf("event %d forwarded %d times, want once", i, n)
		}
	}
}
