package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dialerFrom returns a dialer whose connections come from the loopback
// address ip: another client, to the front door and admission.
func dialerFrom(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
}

// dialFrom opens a TCP connection to the service at url from the loopback
// address ip.
func dialFrom(t *testing.T, ip, url string) net.Conn {
	t.Helper()
	c, err := dialerFrom(ip).Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The service bounds the connections of one address below the request
// layer, under contention only: at the defaults one address opens 12
// connections and each is served; with -max-conns 10 (one kept for the
// connection being accepted), an address holding 9 is reset its next,
// while another address is served in the place of one of its idle ones.
func TestIngestConnectionsPerHostBounded(t *testing.T) {
	url := start(t) // the defaults
	for i := range 12 {
		c := dialFrom(t, "127.0.3.1", url)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d of one address, at the defaults: %v %v; want 200", i+1, resp, err)
		}
	}

	url = start(t, "-max-conns", "10", "-max-idle-conns", "9")
	for range 9 {
		dialFrom(t, "127.0.3.1", url) // held open, no request
	}
	// The reset may reach the dialer before connect returns: that is the
	// same refusal, seen earlier.
	tenth, err := dialerFrom("127.0.3.1").Dial("tcp", strings.TrimPrefix(url, "http://"))
	switch {
	case errors.Is(err, syscall.ECONNRESET):
	case err != nil:
		t.Fatalf("the tenth connection of one address: %v; want it accepted and closed, or reset", err)
	default:
		defer tenth.Close()
		fmt.Fprintf(tenth, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = tenth.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(tenth), nil); err == nil {
			t.Errorf("the tenth connection of one address was answered %s; want it closed at accept", resp.Status)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("the tenth connection of one address was left open (read: %v); want it closed at accept", err)
		}
	}
	other := loopbackClient("127.0.3.2") // one connection for both requests
	resp, err := other.Get(url + "/healthz")
	if err != nil {
		t.Fatalf("another address, while the first holds nine: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the connection kept for the next request
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("another address: GET /healthz %s, want 200", resp.Status)
	}
	resp, err = other.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`geoidem_frontdoor_connections_closed_total{reason="host"} 1`, `geoidem_frontdoor_connections_closed_total{reason="idle"} 1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics has no %s:\n%s", want, grepLines(string(b), "geoidem_frontdoor"))
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A POST body slower than -min-body-rate after the 5 s grace is cut off
// with 408 body-too-slow, long before the server's 30 s read timeout, and
// nothing is claimed: the same key then runs at once.
func TestIngestSlowBodyIsCutOff(t *testing.T) {
	url := start(t)
	body := `{"type":"Feature","id":"slow","geometry":null,"properties":null}`
	c := dialFrom(t, "127.0.3.3", url)
	fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nContent-Type: application/geo+json\r\nIdempotency-Key: slow\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	began := time.Now()
	_ = c.SetReadDeadline(began.Add(25 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a body that stopped after 10 bytes: %v after %v; want 408 within the read timeout", err, time.Since(began).Round(time.Millisecond))
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "#body-too-slow") {
		t.Fatalf("a body that stopped after 10 bytes: %s %s; want 408 body-too-slow", resp.Status, b)
	}
	if took := time.Since(began); took < 5*time.Second {
		t.Errorf("cut off after %v, within the 5 s grace", took)
	}
	if r, b := do(t, http.MethodPost, url+"/features", "slow", body); r.StatusCode != http.StatusCreated {
		t.Errorf("the same key, sent whole: %d %s; want 201 (the cut-off request claimed nothing)", r.StatusCode, b)
	}
}

// A connection the server is done with is given back at once: an address
// whose 8 requests were answered without their bodies being read (net/http
// then closes each connection, half a second after shutting its sending
// side) reads each answer to its end, closes, and opens 8 new connections
// at once, each served, with -max-conns 10 holding an address that holds 8
// to its bound.
func TestIngestFinishedConnectionsReleasedAtOnce(t *testing.T) {
	url := start(t, "-max-conns", "10", "-max-idle-conns", "9")
	addr := strings.TrimPrefix(url, "http://")
	var first []net.Conn
	for range 8 {
		first = append(first, dialFrom(t, "127.0.3.4", url))
	}
	for i, c := range first {
		// 405 from the mux, a 1 MB body declared and 64 KB of it sent.
		fmt.Fprintf(c, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n%s", strings.Repeat("x", 64<<10))
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if _, err := io.ReadAll(br); err != nil {
			t.Fatalf("connection %d, read to its end: %v; want the end, not a reset", i, err)
		}
		c.Close()
	}
	for i := range 8 {
		c, err := dialerFrom("127.0.3.4").Dial("tcp", addr)
		if err != nil {
			t.Fatalf("new connection %d: %v", i, err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("new connection %d, right after the first 8 closed: %v %v; want 200", i, resp, err)
		}
	}
}
