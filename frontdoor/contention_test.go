package frontdoor

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openIdle opens n keep-alive connections from ip, each idle after one
// GET /healthz, failing the test when one is not served; they close with
// the test.
func openIdle(t *testing.T, s *service, ip string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for i := range n {
		c := keepAlive(ip, s.addr)
		if c == nil {
			t.Fatalf("connection %d of %s was not served", i+1, ip)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns
}

// While the service has room, no connection is refused, however many one
// host holds: a provider's pool of 16 connections from one address is
// served whole, with MaxConnsPerHost 2.
func TestNoConnectionRefusedWithRoom(t *testing.T) {
	s := startService(t, door{conns: &connsConfig{MaxConnsPerHost: 2, MaxConns: 64, MaxIdle: 32}})
	openIdle(t, s, "127.0.0.2", 16)
	if st := s.conns.Stats(); st.Refused != 0 || st.Open != 16 {
		t.Errorf("Stats %+v, want 16 open and none refused", st)
	}
}

// startRequest opens a connection from ip and sends a POST header whose
// declared body never comes: the connection is active, and its request
// holds no key.
func startRequest(t *testing.T, s *service, ip, key string) net.Conn {
	t.Helper()
	c, err := dialer(ip).Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", key)
	return c
}

// Under contention (MaxConns open, one of them kept for the connection
// being accepted), a new connection from a host holding little takes the
// place of an idle one first, then of a busy connection (its request not
// in the handler) of the host holding the most; a new connection of the
// host holding the most, at MaxConnsPerHost or more, is the one refused.
func TestContentionClosesIdleThenTheBiggestHost(t *testing.T) {
	s := startService(t, door{conns: &connsConfig{MaxConnsPerHost: 2, MaxConns: 9, MaxIdle: 8}})
	// One idle connection of 127.0.0.3, then 7 busy ones of 127.0.0.2:
	// 8 open, the service full.
	idle := openIdle(t, s, "127.0.0.3", 1)[0]
	var busy []net.Conn
	for i := range 7 {
		busy = append(busy, startRequest(t, s, "127.0.0.2", fmt.Sprint("busy-", i)))
	}
	waitFor(t, 20*time.Second, "7 requests in flight", func() bool { return s.flying.Load() == 7 })
	if st := s.conns.Stats(); st.Refused != 0 || st.Open != 8 {
		t.Fatalf("Stats %+v, want 8 open and none refused", st)
	}
	// A new host: the idle connection goes.
	startRequest(t, s, "127.0.0.4", "new-4")
	if !isClosed(idle, 20*time.Second) {
		t.Error("the idle connection was not closed to make room")
	}
	waitFor(t, 20*time.Second, "8 requests in flight", func() bool { return s.flying.Load() == 8 })
	// Another new host: no idle connection is left, and 127.0.0.2 holds
	// the most: one of its busy connections goes.
	startRequest(t, s, "127.0.0.5", "new-5")
	waitFor(t, 20*time.Second, "a busy connection of the biggest host closed", func() bool { return s.conns.Stats().ClosedBusy == 1 })
	closed := 0
	for _, c := range busy {
		if isClosed(c, 50*time.Millisecond) {
			closed++
		}
	}
	if closed != 1 {
		t.Errorf("%d busy connections of the host holding the most were closed, want 1", closed)
	}
	// The biggest host, at its bound, is refused while the service is full.
	if c, err := dialer("127.0.0.2").Dial("tcp", s.addr); err == nil {
		defer c.Close()
		if !isClosed(c, 20*time.Second) {
			t.Error("a new connection of the biggest host was not refused under contention")
		}
	}
	waitFor(t, 20*time.Second, "the biggest host's new connection refused", func() bool { return s.conns.Stats().Refused == 1 })
	if st := s.conns.Stats(); st.ClosedIdle != 1 || st.PeakOpen > 8 {
		t.Errorf("Stats %+v, want 1 idle connection closed and at most 8 open at once", st)
	}
}

// A connection whose request has its body whole, in the handler (it holds
// its claimed key), is never closed to make room: a new connection waits
// for one to free instead.
func TestHeldConnectionsAreNeverClosed(t *testing.T) {
	release := make(chan struct{})
	s := startService(t, door{conns: &connsConfig{MaxConnsPerHost: 2, MaxConns: 5, MaxIdle: 4}, block: release})
	var held []net.Conn
	for i := range 4 {
		c, err := dialer("127.0.0.2").Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: held-%d\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", i)
		held = append(held, c)
	}
	waitFor(t, 20*time.Second, "4 requests in the handler", func() bool { return s.blocked.Load() == 4 })
	got := make(chan error, 1)
	go func() {
		resp, err := clientFrom("127.0.0.3").Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	waitFor(t, 20*time.Second, "the new connection waiting for room", func() bool { return s.conns.Stats().Waiting == 1 })
	for i, c := range held {
		if isClosed(c, 50*time.Millisecond) {
			t.Errorf("held connection %d was closed", i)
		}
	}
	close(release)
	if err := <-got; err != nil {
		t.Errorf("the new connection, once a held one freed: %v", err)
	}
	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if resp, err := readStatus(c); err != nil || resp.StatusCode != http.StatusCreated {
			t.Errorf("held request %d: %v %v", i, resp, err)
		}
	}
	if st := s.conns.Stats(); st.Refused+st.ClosedBusy != 0 {
		t.Errorf("Stats %+v, want no busy connection closed and none refused", st)
	}
}

// A connection the server is done with is given back at once, and its
// client sees its end rather than a reset: when the server answers without
// reading a large body, net/http shuts the connection's sending side, waits
// half a second for the client to read the answer, and only then closes
// it. The client reads the answer and the end (no reset), and by then the
// connection is no longer counted.
func TestFinishedConnectionReleasedAtOnce(t *testing.T) {
	s := startService(t, door{conns: &connsConfig{}})
	c, err := dialer("127.0.0.2").Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 405 from the mux, a 1 MB body declared and 64 KB of it sent: the
	// server answers, and leaves the rest unread.
	fmt.Fprintf(c, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n%s", strings.Repeat("x", 64<<10))
	resp, err := readStatus(c)
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /healthz: %v %v", resp, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("reading to the end: %v", err)
	}
	if st := s.conns.Stats(); st.Open != 0 {
		t.Errorf("Stats %+v once the server ended the connection, want none open", st)
	}
}
