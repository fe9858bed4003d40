package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// fakeUpstream counts the requests that reached it and answers each with
// answer; it returns its URL.
func fakeUpstream(t *testing.T, answer func(n int64, w http.ResponseWriter, r *http.Request)) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		answer(n.Add(1), w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// reset closes the connection without an answer, after the request was read:
// the upstream may have done the work.
func reset(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
}

func created(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"stored":["f1"]}`)
}

// startProxyAdmin starts the proxy with an admin listener, each on a port
// of its choosing, and returns the proxy's URL and the admin's.
func startProxyAdmin(t *testing.T, upstream string, args ...string) (string, string) {
	t.Helper()
	urls := startedAll(t, proxyCommand(upstream, append([]string{"-admin-addr", "127.0.0.1:0"}, args...)...), proxyLine, adminLine)
	return urls[0], urls[1]
}

func metricsOf(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestProxyUncertainIsHeld: an upstream that fails after the request was
// sent (the connection reset, its answer cut short, a 502 or 504 of its own
// proxy, the upstream timeout) may have done the work. The key is never released: the answer
// is 503 upstream-uncertain with a Retry-After (an HTTP-date, true at every
// replay) at the hold's end, every retry gets it replayed and never reaches
// the upstream, the key shows as uncertain in `geoidem keys get` and the
// metrics, and `geoidem keys release` lets the next delivery run.
func TestProxyUncertainIsHeld(t *testing.T) {
	for _, c := range []struct {
		name  string
		fail  func(w http.ResponseWriter)
		flags []string
	}{
		{"reset", reset, nil},
		{"answer cut short", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"stored":`)
			_ = http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}, nil},
		{"502", func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) }, nil},
		{"504", func(w http.ResponseWriter) { w.WriteHeader(http.StatusGatewayTimeout) }, nil},
		{"timeout", func(w http.ResponseWriter) { time.Sleep(2 * time.Second); created(w) }, []string{"-upstream-timeout", "300ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			upstream, calls := fakeUpstream(t, func(n int64, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					c.fail(w)
					return
				}
				created(w)
			})
			url, admin := startProxyAdmin(t, upstream, append([]string{"-uncertain-hold", "1h"}, c.flags...)...)
			before := time.Now()
			for i := range 3 {
				resp, body := deliver(t, url, "k-"+c.name, pointFeature)
				if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "upstream-uncertain") || resp.Header.Get("Geoidem-Outcome") != "uncertain" {
					t.Fatalf("attempt %d: %d %v %s, want 503 upstream-uncertain", i+1, resp.StatusCode, resp.Header, body)
				}
				if (resp.Header.Get("Idempotent-Replayed") == "true") != (i > 0) {
					t.Errorf("attempt %d: Idempotent-Replayed %q", i+1, resp.Header.Get("Idempotent-Replayed"))
				}
				at, err := http.ParseTime(resp.Header.Get("Retry-After"))
				if err != nil || at.Before(before.Add(59*time.Minute)) || at.After(time.Now().Add(61*time.Minute)) {
					t.Errorf("attempt %d: Retry-After %q, want the hold's end, an hour on (%v)", i+1, resp.Header.Get("Retry-After"), err)
				}
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("the upstream was called %d times, want once: an uncertain key was released", n)
			}
			m := metricsOf(t, url)
			for _, want := range []string{`geoidem_upstream_requests_total{result="uncertain"} 1`, "geoidem_upstream_uncertain_held_total 1"} {
				if !strings.Contains(m, want) {
					t.Errorf("no %q in the metrics:\n%s", want, m)
				}
			}
			code, out, errs := geoidem(t, "", "keys", "get", "-store", admin, "k-"+c.name)
			if code != 0 || !strings.Contains(out, "uncertain") || !strings.Contains(out, "geoidem keys release") {
				t.Errorf("keys get: exit %d\n%s%s", code, out, errs)
			}
			code, out, errs = geoidem(t, "", "keys", "release", "-store", admin, "k-"+c.name)
			if code != 0 || !strings.Contains(out, "released") {
				t.Fatalf("keys release: exit %d\n%s%s", code, out, errs)
			}
			resp, body := deliver(t, url, "k-"+c.name, pointFeature)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "" || calls.Load() != 2 {
				t.Errorf("after the release: %d replayed=%q, upstream calls %d; want a fresh 201 from a second call: %s",
					resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), calls.Load(), body)
			}
		})
	}
}

// TestProxyUnreachableIsReleased: nothing sent (nothing listens at the
// upstream's address), nothing done: 503 upstream-unreachable with
// Retry-After, the key released, so that the retry, once the upstream is
// up, runs.
func TestProxyUnreachableIsReleased(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	url := startProxy(t, "http://"+addr)
	for i := range 2 {
		resp, body := deliver(t, url, "k-down", pointFeature)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "upstream-unreachable") ||
			resp.Header.Get("Retry-After") != "1" || resp.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("attempt %d: %d %v %s, want 503 upstream-unreachable, Retry-After: 1, not a replay", i+1, resp.StatusCode, resp.Header, body)
		}
	}
	if m := metricsOf(t, url); !strings.Contains(m, `geoidem_upstream_requests_total{result="unreachable"} 2`) ||
		!strings.Contains(m, "geoidem_upstream_uncertain_held_total 0") {
		t.Errorf("metrics:\n%s", m)
	}
	// The upstream comes up on that address: the retry runs.
	var calls atomic.Int64
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the address was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1); created(w) })}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { srv.Close() })
	resp, body := deliver(t, url, "k-down", pointFeature)
	if resp.StatusCode != http.StatusCreated || calls.Load() != 1 {
		t.Errorf("once up: %d, %d call(s): %s", resp.StatusCode, calls.Load(), body)
	}
}

// TestProxyUncertainHoldZeroReleases: with -uncertain-hold 0 (an upstream
// that deduplicates by the forwarded key) an uncertain outcome is answered
// 503 with Retry-After and its key released, and the retry is forwarded
// under the same Idempotency-Key.
func TestProxyUncertainHoldZeroReleases(t *testing.T) {
	keys := make(chan string, 2)
	upstream, calls := fakeUpstream(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		if n == 1 {
			reset(w)
			return
		}
		created(w)
	})
	url := startProxy(t, upstream, "-uncertain-hold", "0")
	resp, body := deliver(t, url, "k-dedup", pointFeature)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "upstream-uncertain") || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("first: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = deliver(t, url, "k-dedup", pointFeature)
	if resp.StatusCode != http.StatusCreated || calls.Load() != 2 {
		t.Fatalf("retry: %d, %d call(s): %s", resp.StatusCode, calls.Load(), body)
	}
	if a, b := <-keys, <-keys; a != "k-dedup" || b != "k-dedup" {
		t.Errorf("forwarded keys %q, %q, want k-dedup both times", a, b)
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestProxyAiohttpKilledAfterCommit: the aiohttp receiver commits its work
// (a line in its runs file) and dies before answering, and is restarted on
// the same address. The proxy held the key: the retry is answered the
// uncertain 503 again and the restarted receiver does not run the event a
// second time. With -uncertain-hold 0, the release a plain reverse proxy
// behind the middleware would make, the retry runs it twice: the hold is
// what saves it.
func TestProxyAiohttpKilledAfterCommit(t *testing.T) {
	for _, c := range []struct {
		hold     string
		wantRuns int
	}{{"1h", 1}, {"0", 2}} {
		t.Run("hold="+c.hold, func(t *testing.T) {
			port, runsFile := freePort(t), filepath.Join(t.TempDir(), "runs.jsonl")
			upstream := startReceiver(t, "--port", port, "--runs", runsFile, "--die-after", "1")
			url := startProxy(t, upstream, "-uncertain-hold", c.hold)
			resp, body := deliver(t, url, "k-killed", pointFeature)
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "upstream-uncertain") {
				t.Fatalf("first: %d %s, want 503 upstream-uncertain", resp.StatusCode, body)
			}
			upstream = startReceiver(t, "--port", port, "--runs", runsFile)
			resp, body = deliver(t, url, "k-killed", pointFeature)
			runs, keys := receiverRuns(t, upstream)
			if runs != c.wantRuns || keys["k-killed"] != c.wantRuns {
				t.Errorf("the event ran %d times (%v), want %d; the retry was answered %d %s", runs, keys, c.wantRuns, resp.StatusCode, body)
			}
		})
	}
}

// TestProxyUncertainOnSharedStores: on Redis and PostgreSQL, as in memory,
// an uncertain outcome is held and replayed, `geoidem keys get -store`
// shows it uncertain, and `geoidem keys release` lets the next delivery
// run.
func TestProxyUncertainOnSharedStores(t *testing.T) {
	for _, st := range keysStores(t) {
		t.Run(st.name, func(t *testing.T) {
			upstream, calls := fakeUpstream(t, func(n int64, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					reset(w)
					return
				}
				created(w)
			})
			url := startProxy(t, upstream, append([]string{"-redis-volatile"}, st.flags...)...)
			for i := range 2 {
				resp, body := deliver(t, url, "k-shared", pointFeature)
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Geoidem-Outcome") != "uncertain" {
					t.Fatalf("attempt %d: %d %v %s, want 503 uncertain", i+1, resp.StatusCode, resp.Header, body)
				}
			}
			if calls.Load() != 1 {
				t.Fatalf("the upstream was called %d times, want once", calls.Load())
			}
			code, out := keysCmd(t, st, "", "get", "k-shared")
			expect(t, "keys get", code, out, 0, "uncertain", "geoidem keys release")
			code, out = keysCmd(t, st, "", "release", "k-shared")
			expect(t, "keys release", code, out, 0, "released", "held as uncertain")
			if resp, body := deliver(t, url, "k-shared", pointFeature); resp.StatusCode != http.StatusCreated || calls.Load() != 2 {
				t.Errorf("after the release: %d, %d call(s): %s", resp.StatusCode, calls.Load(), body)
			}
		})
	}
}

// TestProxyWebhooks: with -webhook-secret the proxy forwards only signed
// Standard Webhooks, the webhook-id as the Idempotency-Key too; an unsigned
// request never reaches the upstream.
func TestProxyWebhooks(t *testing.T) {
	keys := make(chan string, 4)
	upstream, calls := fakeUpstream(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		created(w)
	})
	secret := standardwebhooks.GenerateSecret()
	url := startProxy(t, upstream, "-webhook-secret", secret.Encode())
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(sign bool) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(pointFeature))
		req.Header.Set("Content-Type", "application/geo+json")
		if sign {
			if err := signer.SignRequest(req, "msg_2Yk", []byte(pointFeature)); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := send(false); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned: %d, want 401", resp.StatusCode)
	}
	for i := range 2 {
		if resp := send(true); resp.StatusCode != http.StatusCreated || (resp.Header.Get("Idempotent-Replayed") == "true") != (i == 1) {
			t.Errorf("signed, attempt %d: %d replayed %q", i+1, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("the upstream was called %d times, want once", calls.Load())
	}
	if k := <-keys; k != `"msg_2Yk"` {
		t.Errorf("forwarded Idempotency-Key %q, want the webhook-id as an RFC 9651 string", k)
	}
}

// TestProxyLargeConcurrentDeliveries: legitimate traffic through the
// proxy's defaults: 32 concurrent deliveries of a 1 MB feature by paired
// senders from one address are all delivered (admission may answer some
// 429 or 503 with Retry-After on the way) and each reaches the upstream
// once, in full.
func TestProxyLargeConcurrentDeliveries(t *testing.T) {
	var bytesIn atomic.Int64
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		bytesIn.Add(n)
		mu.Lock()
		seen[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		created(w)
	}))
	t.Cleanup(srv.Close)
	url := startProxy(t, srv.URL)
	var coords strings.Builder
	for coords.Len() < 1_000_000 {
		fmt.Fprintf(&coords, "[%d.123456,%d.654321],", coords.Len()%170, coords.Len()%80)
	}
	body := []byte(`{"type":"Feature","id":"big","geometry":{"type":"LineString","coordinates":[` + strings.TrimSuffix(coords.String(), ",") + `]},"properties":null}`)
	sender, err := client.New(&http.Client{}, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			res, err := sender.Deliver(t.Context(), client.Delivery{URL: url + "/features", Key: fmt.Sprintf("big-%d", i), Body: body, ContentType: "application/geo+json"})
			if err != nil {
				t.Errorf("delivery %d: %v (status %d)", i, err, res.StatusCode)
			}
		})
	}
	wg.Wait()
	if len(seen) != 32 || bytesIn.Load() != 32*int64(len(body)) {
		t.Errorf("the upstream saw %d keys and %d bytes, want 32 and %d", len(seen), bytesIn.Load(), 32*len(body))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s reached the upstream %d times", k, n)
		}
	}
}
