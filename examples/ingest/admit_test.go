package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// feature is a small valid Feature with the given id.
func feature(id string) string {
	return `{"type":"Feature","id":"` + id + `","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
}

// postHead writes the head of a POST /features with key and a body of
// length bytes on c, and the first part of body.
func postHead(t *testing.T, c net.Conn, key string, length int, first string) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nContent-Type: application/geo+json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n%s", key, length, first); err != nil {
		t.Fatal(err)
	}
}

// An answer that does not need the body is not held waiting for a body
// that is not coming: GET /healthz declaring a body it never sends is
// answered at once, not at the server's 30 s read timeout.
func TestIngestAnswerWaitsForNoBody(t *testing.T) {
	url := start(t)
	c := dialFrom(t, "127.0.4.1", url)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	began := time.Now()
	_ = c.SetReadDeadline(began.Add(20 * time.Second)) // well under the 30 s read timeout
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET /healthz declaring a body it never sends: %v after %v; want its answer without the body", err, time.Since(began).Round(time.Millisecond))
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %s, want 200", resp.Status)
	}
}

// A sender with one delivery in its handler and a second body arriving
// well within the rate is not cut off to make room for another client:
// with -max-in-flight 8, the sender's two and two slow bodies from each of
// three other addresses hold every slot when another address posts.
func TestIngestArrivingBodyOfABusySenderIsNotCut(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	url := startWith(t, hook(func(fs []service.Feature) {
		if len(fs) == 1 && fs[0].ID == "hold" {
			entered <- struct{}{}
			<-release
		}
	}, 0), "-max-in-flight", "8")
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	// The sender's first delivery, held in its handler.
	first := make(chan int, 1)
	go func() {
		code, err := postBody(loopbackClient("127.0.4.2"), url, "hold", []byte(feature("hold")))
		if err != nil {
			t.Error(err)
		}
		first <- code
	}()
	<-entered

	// Its second, arriving: half sent now, the rest after the third
	// address has been answered (well within the 5 s grace).
	body := feature("second")
	second := dialFrom(t, "127.0.4.2", url)
	postHead(t, second, "second", len(body), body[:len(body)/2])
	time.Sleep(100 * time.Millisecond) // so that it is the oldest body arriving

	// Two slow bodies from each of three other addresses (a client's
	// share of 8 is 2).
	for h := range 3 {
		for i := range 2 {
			postHead(t, dialFrom(t, fmt.Sprint("127.0.4.", 5+h), url), fmt.Sprint("slow-", h, "-", i), 100, "{")
		}
	}
	time.Sleep(100 * time.Millisecond)

	// A third address posts.
	code, err := postBody(loopbackClient("127.0.4.4"), url, "third", []byte(feature("third")))
	t.Logf("the third address: %d %v", code, err)

	if _, err := io.WriteString(second, body[len(body)/2:]); err != nil {
		t.Fatalf("the rest of the sender's second body: %v (its connection was closed)", err)
	}
	close(release)
	_ = second.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil {
		t.Fatalf("the sender's second delivery: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Errorf("the sender's second delivery, arriving within the rate: %s %s; want 2xx", resp.Status, b)
	}
	if c := <-first; c/100 != 2 {
		t.Errorf("the sender's first delivery: %d, want 2xx", c)
	}
}

// invalidBody is a small body whose 422 answer is large (a pointer per
// problem).
func invalidBody() (string, int) {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	n := 400
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"Feature","geometry":{"type":"Point","coordinates":[]},"properties":null}`)
	}
	b.WriteString(`]}`)
	return b.String(), n
}

// slowReader dials from ip with a receive buffer of 1 KiB: a client that
// posts and never reads its answer.
func slowReader(t *testing.T, ip, url string) net.Conn {
	t.Helper()
	d := dialerFrom(ip)
	d.Control = func(_, _ string, rc syscall.RawConn) error {
		var err error
		_ = rc.Control(func(fd uintptr) {
			if err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024); err == nil {
				err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 1460)
			}
		})
		return err
	}
	c, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// An answer being written holds no work slot: with -max-in-flight 8,
// eight clients that post an invalid body and never read its large 422
// leave room for a sender, which is answered 201.
func TestIngestSlowReaderHoldsNoSlot(t *testing.T) {
	url := start(t, "-max-in-flight", "8")
	body, _ := invalidBody()
	probe := loopbackClient("127.0.4.9")
	req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/geo+json")
	req.Header.Set("Idempotency-Key", "probe")
	resp, err := probe.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || len(answer) < 32<<10 {
		t.Fatalf("the invalid body: %s, %d bytes; want a 422 of at least 32 KiB", resp.Status, len(answer))
	}
	for i := range 8 {
		c := slowReader(t, fmt.Sprintf("127.0.4.%d", 10+i), url)
		postHead(t, c, fmt.Sprint("unread-", i), len(body), body)
	}
	time.Sleep(500 * time.Millisecond) // their answers being written
	ok := 0
	var other []string
	c := loopbackClient("127.0.4.30")
	for i := range 10 {
		code, err := postBody(c, url, fmt.Sprint("sender-", i), []byte(feature(fmt.Sprint("s", i))))
		if code == http.StatusCreated {
			ok++
		} else {
			other = append(other, fmt.Sprintf("%d %v", code, err))
		}
	}
	t.Logf("the sender got %d/10 201, %v; the answer not read is %d bytes", ok, other, len(answer))
	if ok < 10 {
		t.Errorf("the sender got %d/10 201 while eight clients do not read their answers: %v", ok, other)
	}
}

// Every front-door decision is in /metrics: bodies cut, work slots held,
// refusals by reason, and known senders admitted.
func TestIngestFrontDoorMetrics(t *testing.T) {
	url := start(t)
	if r, b := do(t, http.MethodPost, url+"/features", "m", feature("m")); r.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d %s", r.StatusCode, b)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`geoidem_frontdoor_bodies_cut_total{reason="slow"} 0`,
		`geoidem_frontdoor_bodies_cut_total{reason="room"} 0`,
		`geoidem_frontdoor_bodies_cut_total{reason="stalled"} 0`,
		`geoidem_frontdoor_slots_held 0`,
		`geoidem_frontdoor_bodies_arriving 0`,
		`geoidem_frontdoor_refused_total{reason="server_busy"} 0`,
		`geoidem_frontdoor_refused_total{reason="client_busy"} 0`,
		`geoidem_frontdoor_known_admitted_total 0`,
		`geoidem_frontdoor_answers_cut_total 0`,
		`geoidem_frontdoor_connections{state="open"} `,
		`geoidem_frontdoor_connections_closed_total{reason="host"} 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
}

// A provider's 32 concurrent 1 MB deliveries on 32 connections, twice the
// bytes in flight: each waits for room rather than being refused, and
// every one is answered 2xx. (Connections per host unbounded here: their
// bound is the front door's connections part.)
func TestIngestConcurrentLargeDeliveriesAllPass(t *testing.T) {
	url := start(t, "-max-conns-per-host", "-1")
	big := []byte(`{"type":"Feature","id":"big","geometry":null,"properties":null}` + strings.Repeat(" ", 1000_000))
	c := &http.Client{Transport: &http.Transport{DialContext: dialerFrom("127.0.4.40").DialContext, MaxConnsPerHost: 32, MaxIdleConnsPerHost: 32}, Timeout: time.Minute}
	codes := make(chan string, 32)
	for i := range 32 {
		go func() {
			code, err := postBody(c, url, fmt.Sprint("big-", i), big)
			codes <- fmt.Sprint(code, " ", err)
		}()
	}
	bad := map[string]int{}
	for range 32 {
		if s := <-codes; !strings.HasPrefix(s, "2") {
			bad[s]++
		}
	}
	if len(bad) > 0 {
		t.Errorf("32 concurrent 1 MB deliveries: %v not 2xx", bad)
	}
}

// 50 concurrent duplicates from one address: one runs, the others wait
// for a work slot and are answered as duplicates (a replay or 409), none
// refused for want of room.
func TestIngestConcurrentDuplicatesAreNotRefused(t *testing.T) {
	url := start(t, "-max-conns-per-host", "-1")
	c := &http.Client{Transport: &http.Transport{DialContext: dialerFrom("127.0.4.41").DialContext, MaxConnsPerHost: 50, MaxIdleConnsPerHost: 50}, Timeout: time.Minute}
	codes := make(chan int, 50)
	for range 50 {
		go func() {
			code, _ := postBody(c, url, "dup", []byte(feature("dup")))
			codes <- code
		}()
	}
	got := map[int]int{}
	for range 50 {
		got[<-codes]++
	}
	if got[http.StatusCreated]+got[http.StatusConflict] != 50 {
		t.Errorf("50 concurrent duplicates: %v; want 201 (the original and its replays) and 409 only", got)
	}
}

// A verified provider is never cut off and gets its deliveries through
// while eight addresses hold slow bodies under junk but well-formed
// signatures, declaring 1 MiB each against -max-in-flight-bytes 4 MiB:
// junk earns nothing, so the attackers' bodies are what is cut to make
// room.
func TestIngestVerifiedProviderUnderJunkSignatures(t *testing.T) {
	secret := standardwebhooks.GenerateSecret()
	url := start(t, "-webhook-secret", secret.Encode(), "-max-in-flight-bytes", fmt.Sprint(4<<20))
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	junk := standardwebhooks.GenerateSecret()
	junkSigner, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{junk}})
	if err != nil {
		t.Fatal(err)
	}
	// The attackers: a junk-signed head declaring 1 MiB, then a byte now
	// and then, reconnecting when cut.
	stop := make(chan struct{})
	done := make(chan struct{})
	var attackers sync.WaitGroup
	for h := range 8 {
		attackers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				c, err := dialerFrom(fmt.Sprint("127.0.5.", 10+h)).Dial("tcp", strings.TrimPrefix(url, "http://"))
				if err != nil {
					continue
				}
				req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(""))
				_ = junkSigner.SignRequest(req, fmt.Sprint("msg_junk_", h, "_", n), []byte("x"))
				fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nContent-Type: application/geo+json\r\nwebhook-id: %s\r\nwebhook-timestamp: %s\r\nwebhook-signature: %s\r\nContent-Length: %d\r\n\r\n{",
					req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"), 1<<20)
				go func() { <-stop; c.Close() }()
				_, _ = http.ReadResponse(bufio.NewReader(c), nil)
				c.Close()
			}
		})
	}
	go func() { attackers.Wait(); close(done) }()
	defer func() { close(stop); <-done }()
	time.Sleep(500 * time.Millisecond) // the attack under way

	big := []byte(`{"type":"Feature","id":"p","geometry":null,"properties":null}` + strings.Repeat(" ", 1000_000))
	c := loopbackClient("127.0.5.2")
	ok, other := 0, map[string]int{}
	const n = 20
	for i := range n {
		req, _ := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(big))
		req.Header.Set("Content-Type", "application/geo+json")
		if err := signer.SignRequest(req, fmt.Sprint("msg_p_", i), big); err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			other[err.Error()]++
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			ok++
		} else {
			other[resp.Status]++
		}
	}
	if ok < n {
		t.Errorf("the verified provider got %d/%d 2xx under junk signatures: %v", ok, n, other)
	}
}
