package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/internal/testkit"
)

// poolFrom returns an HTTP client from the loopback address ip whose pool
// holds up to n connections, as a provider's or a proxy's.
func poolFrom(ip string, n int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{DialContext: dialerFrom(ip).DialContext, MaxConnsPerHost: n, MaxIdleConnsPerHost: n},
		Timeout:   2 * time.Minute,
	}
}

// delivery is what one delivery met: the answers in order, and the
// transport error that ended it, if any.
type delivery struct {
	statuses []int
	err      error
}

// deliver posts body under key with c as a sender does: again after the
// Retry-After of a 429 or 503 (at most 2 s, 30 times), never after a
// transport error (a reset is what these tests count).
func deliver(c *http.Client, url, key string, body []byte, header http.Header) delivery {
	var d delivery
	for range 30 {
		req, err := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(body))
		if err != nil {
			d.err = err
			return d
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/geo+json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := c.Do(req)
		if err != nil {
			d.err = err
			return d
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d.statuses = append(d.statuses, resp.StatusCode)
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			return d
		}
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		time.Sleep(min(time.Duration(wait)*time.Second, 2*time.Second))
	}
	return d
}

// tally sums deliveries: the final answers, the transport errors, and the
// answers that were retried (429, 503).
func tally(ds []delivery) (final map[int]int, errs []error, retried int) {
	final = map[int]int{}
	for _, d := range ds {
		if d.err != nil {
			errs = append(errs, d.err)
			continue
		}
		final[d.statuses[len(d.statuses)-1]]++
		retried += len(d.statuses) - 1
	}
	return final, errs, retried
}

// paddedFeature returns a Feature document of id, padded to about size bytes.
func paddedFeature(id string, size int) []byte {
	pad := max(size-120, 0)
	return []byte(`{"type":"Feature","id":"` + id + `","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"pad":"` + strings.Repeat("x", pad) + `"}}`)
}

// legitStores are the stores the legitimate shapes run on: every store the
// service can open, each with a key prefix or tables of its own (named
// after test), dropped when the test ends.
func legitStores(t *testing.T, test string) []struct {
	name string
	args []string
} {
	suffix := test + "_" + strconv.FormatUint(rand.Uint64(), 36)
	prefix := "geoidem-" + suffix + ":"
	keyTable, featuresTable := suffix+"_keys", suffix+"_features"
	dropRedisPrefix(t, prefix)
	t.Cleanup(func() { dropTables(t, keyTable, featuresTable) })
	return []struct {
		name string
		args []string
	}{
		{"memory", []string{"-store", "memory"}},
		{"redis", []string{"-store", testkit.SharedURL(), "-redis-prefix", prefix, "-redis-volatile"}},
		{"postgres", []string{"-store", postgresURL(), "-pg-key-table", keyTable, "-pg-features-table", featuresTable}},
	}
}

// A provider's pool of 16, or a proxy's of 100, connections from one
// address delivers 200 events through the defaults: none is reset, each is
// stored once; the pool of 16 on every store, that of 100 in memory.
func TestIngestConnectionPools(t *testing.T) {
	for _, st := range legitStores(t, "pools") {
		for _, pool := range []int{16, 100} {
			if pool == 100 && st.name != "memory" {
				continue
			}
			t.Run(st.name+"/"+fmt.Sprint(pool), func(t *testing.T) {
				connectionPool(t, pool, st.args)
			})
		}
	}
}

// connectionPool delivers 200 events from a pool of pool connections to
// the service started with args, and checks each was stored once.
func connectionPool(t *testing.T, pool int, args []string) {
	var mu sync.Mutex
	runs := map[string]int{}
	url := startWith(t, hook(func(fs []service.Feature) {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range fs {
			runs[fmt.Sprint(f.ID)]++
		}
	}, 0), args...)
	c := poolFrom("127.0.5.1", pool)
	ds := make([]delivery, 200)
	var wg sync.WaitGroup
	next := make(chan int)
	for range pool {
		wg.Go(func() {
			for i := range next {
				ds[i] = deliver(c, url, fmt.Sprint("pool-", i), paddedFeature(fmt.Sprint("p", i), 200), nil)
			}
		})
	}
	for i := range ds {
		next <- i
	}
	close(next)
	wg.Wait()
	final, errs, retried := tally(ds)
	t.Logf("pool %d: final answers %v, %d retried after 429/503, %d transport errors", pool, final, retried, len(errs))
	if len(errs) > 0 {
		t.Errorf("%d of 200 deliveries ended in a transport error, want none; the first: %v", len(errs), errs[0])
	}
	if final[http.StatusCreated] != len(ds)-len(errs) {
		t.Errorf("final answers %v, want 201 for every delivery", final)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range ds {
		if n := runs[fmt.Sprint("p", i)]; n != 1 {
			t.Errorf("event %d was written %d times, want once", i, n)
		}
	}
}

// 50 concurrent deliveries of one event from one address, each on its own
// connection: none is reset, and each is answered 2xx (the original or its
// replay) or 409 (the original still in flight); on every store.
func TestIngestConcurrentDuplicates(t *testing.T) {
	for _, st := range legitStores(t, "dups") {
		t.Run(st.name, func(t *testing.T) { concurrentDuplicates(t, st.args) })
	}
}

// concurrentDuplicates sends the 50 duplicates to the service started
// with args.
func concurrentDuplicates(t *testing.T, args []string) {
	url := startWith(t, hook(nil, 200*time.Millisecond), args...)
	body := paddedFeature("dup", 200)
	ds := make([]delivery, 50)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range ds {
		c := poolFrom("127.0.5.2", 1)
		wg.Go(func() {
			<-start
			ds[i] = deliver(c, url, "dup", body, nil)
		})
	}
	close(start)
	wg.Wait()
	final, errs, retried := tally(ds)
	t.Logf("final answers %v, %d retried after 429/503, %d transport errors", final, retried, len(errs))
	if len(errs) > 0 {
		t.Errorf("%d of 50 duplicates ended in a transport error, want none; the first: %v", len(errs), errs[0])
	}
	for code, n := range final {
		if code/100 != 2 && code != http.StatusConflict {
			t.Errorf("%d duplicates answered %d, want 2xx or 409", n, code)
		}
	}
}

// 32 concurrent deliveries of about 1 MB, each on its own connection from
// one address: none is reset, and each ends 2xx (after the Retry-After of
// any 429 or 503, as a sender does).
func TestIngestLargeDeliveries(t *testing.T) {
	url := start(t)
	ds := make([]delivery, 32)
	var wg sync.WaitGroup
	start := make(chan struct{})
	c := poolFrom("127.0.5.3", 32)
	for i := range ds {
		body := paddedFeature(fmt.Sprint("big", i), 1_000_000)
		wg.Go(func() {
			<-start
			ds[i] = deliver(c, url, fmt.Sprint("big-", i), body, nil)
		})
	}
	close(start)
	wg.Wait()
	final, errs, retried := tally(ds)
	t.Logf("final answers %v, %d retried after 429/503, %d transport errors", final, retried, len(errs))
	if len(errs) > 0 {
		t.Errorf("%d of 32 deliveries ended in a transport error, want none; the first: %v", len(errs), errs[0])
	}
	if final[http.StatusCreated] != len(ds) {
		t.Errorf("final answers %v, want 201 for all 32", final)
	}
}

// Behind a trusted proxy every request-level bound keys on the forwarded
// client: with -max-in-flight 6 (a client kept to one slot once four are
// held and another client holds some), three clients forwarded by one
// proxy and one address of its own each hold a request; a fourth
// forwarded client is admitted, while the first's second request is
// refused 429 client-busy once the front door's wait for room has
// passed. From a proxy not trusted, the header is ignored: the proxy is
// one client holding three, and its fourth request is refused 429.
func TestIngestTrustedProxyClients(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run(fmt.Sprint("trusted ", trusted), func(t *testing.T) {
			// Each request is held in the handler until the test lets go,
			// longer than the front door's wait for room (5 s).
			entered, release := make(chan struct{}, 8), make(chan struct{})
			var once sync.Once
			letGo := func() { once.Do(func() { close(release) }) }
			defer letGo()
			args := []string{"-max-in-flight", "6"}
			if trusted {
				args = append(args, "-trusted-proxies", "127.0.6.0/24")
			}
			url := startWith(t, hook(func([]service.Feature) { entered <- struct{}{}; <-release }, 0), args...)
			proxy, own := poolFrom("127.0.6.1", 16), poolFrom("127.0.7.1", 4)
			send := func(c *http.Client, client, key string) <-chan int {
				got := make(chan int, 1)
				go func() { got <- deliverOnce(c, url, key, client) }()
				return got
			}
			hold := func(c *http.Client, client, key string) <-chan int {
				got := send(c, client, key)
				select {
				case <-entered:
				case code := <-got:
					t.Fatalf("%s's request %s answered %d, want it held in the handler", client, key, code)
				}
				return got
			}
			var held []<-chan int
			for i, client := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
				held = append(held, hold(proxy, client, fmt.Sprint("held-", i)))
			}
			held = append(held, hold(own, "", "own"))
			if !trusted {
				if code := <-send(proxy, "198.51.100.4", "fourth"); code != http.StatusTooManyRequests {
					t.Errorf("the untrusted proxy's fourth request: %d, want 429 (one client, the proxy, holding three)", code)
				}
			} else {
				held = append(held, hold(proxy, "198.51.100.4", "fourth"))
				if code := <-send(proxy, "198.51.100.1", "second"); code != http.StatusTooManyRequests {
					t.Errorf("the first client's second request: %d, want 429 client-busy", code)
				}
			}
			letGo()
			for i, h := range held {
				if code := <-h; code != http.StatusCreated {
					t.Errorf("held request %d: %d, want 201", i, code)
				}
			}
		})
	}
}

// deliverOnce posts a small feature under key through the proxy's client
// c, forwarded for client, and returns the answer's status (0 on a
// transport error).
func deliverOnce(c *http.Client, url, key, client string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/features", bytes.NewReader(paddedFeature(key, 200)))
	req.Header.Set("Content-Type", "application/geo+json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Forwarded-For", client)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// -trusted-proxies takes networks and addresses, -forwarded-header one of
// the two headers it reads; anything else is a usage error.
func TestIngestTrustedProxiesFlags(t *testing.T) {
	cfg, code := parseFlags([]string{"-trusted-proxies", "10.0.0.0/8, 192.0.2.1", "-trusted-proxies", "2001:db8::/32", "-forwarded-header", "Forwarded"}, io.Discard)
	if cfg == nil {
		t.Fatalf("exit %d", code)
	}
	if got := fmt.Sprintf("%v %s", cfg.service.TrustedProxies, cfg.service.ForwardedHeader); got != "[10.0.0.0/8 192.0.2.1/32 2001:db8::/32] Forwarded" {
		t.Errorf("trusted proxies and header %s", got)
	}
	for _, args := range [][]string{{"-trusted-proxies", "10.0.0.0/33"}, {"-trusted-proxies", "proxy.internal"}, {"-forwarded-header", "X-Real-IP"}} {
		if cfg, code := parseFlags(args, io.Discard); cfg != nil || code != 2 {
			t.Errorf("%q: exit %d, want a usage error (2)", args, code)
		}
	}
}
