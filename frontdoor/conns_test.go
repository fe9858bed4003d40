package frontdoor

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// keepAlive opens a connection from ip, sends one GET /healthz and reads
// its answer, leaving the connection idle; nil when the server closed it
// or did not answer.
func keepAlive(ip, addr string) net.Conn {
	c, err := dialer(ip).Dial("tcp", addr)
	if err != nil {
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		c.Close()
		return nil
	}
	if resp, err := readStatus(c); err != nil || resp.StatusCode != http.StatusOK {
		c.Close()
		return nil
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

// Under contention (MaxConns open, one kept for the connection being
// accepted), a host holding MaxConnsPerHost or more, and the most, is
// refused its next connection at accept without an answer, while another
// host is served in the place of an idle connection; when one of the
// host's connections closes, it may open another.
func TestConnectionsPerHost(t *testing.T) {
	s := startService(t, door{conns: &connsConfig{MaxConnsPerHost: 2, MaxConns: 4, MaxIdle: 3}})
	first := keepAlive("127.0.0.2", s.addr)
	second, third := keepAlive("127.0.0.2", s.addr), keepAlive("127.0.0.2", s.addr)
	if first == nil || second == nil || third == nil {
		t.Fatal("the host's first three connections were not served, with room for them")
	}
	defer second.Close()
	defer third.Close()
	// The reset may come before the dial returns.
	if fourth, err := dialer("127.0.0.2").Dial("tcp", s.addr); err == nil {
		defer fourth.Close()
		if !isClosed(fourth, 20*time.Second) {
			t.Error("the host's fourth connection was not closed at accept")
		}
	}
	waitFor(t, 20*time.Second, "the fourth connection refused", func() bool { return s.conns.Stats().Refused == 1 })
	if c := keepAlive("127.0.0.3", s.addr); c == nil {
		t.Error("another host was refused")
	} else {
		c.Close()
	}
	if !isClosed(first, 20*time.Second) {
		t.Error("the connection idle longest was not closed for another host's")
	}
	second.Close()
	waitFor(t, 20*time.Second, "the closed connections given back", func() bool { return s.conns.Stats().Open == 1 })
	if c := keepAlive("127.0.0.2", s.addr); c == nil {
		t.Error("the host could not open a connection after closing one")
	} else {
		c.Close()
	}
	if st := s.conns.Stats(); st.Refused != 1 || st.ClosedIdle != 1 || st.PeakOpen > 3 {
		t.Errorf("Stats %+v, want 1 refused, 1 idle closed and at most 3 open at once", st)
	}
}

// The connections waiting for a request are held to MaxIdle: past it, the
// one that has waited longest is closed, and the others are kept.
func TestOldestIdleConnectionClosed(t *testing.T) {
	s := startService(t, door{conns: &connsConfig{MaxIdle: 2, MaxConns: 16}})
	var conns []net.Conn
	for i := range 3 {
		c := keepAlive("127.0.0.2", s.addr)
		if c == nil {
			t.Fatalf("connection %d was not served", i)
		}
		defer c.Close()
		conns = append(conns, c)
		// The next connection only once this one waits for its next
		// request: the order they began to wait is the order here.
		waitFor(t, 20*time.Second, "the connection idle", func() bool { return s.conns.Stats().Idle == min(i+1, 2) })
	}
	if !isClosed(conns[0], 20*time.Second) {
		t.Error("the connection idle longest was not closed")
	}
	for i, c := range conns[1:] {
		if isClosed(c, 100*time.Millisecond) {
			t.Errorf("connection %d, idle for less long, was closed", i+1)
		}
	}
	if st := s.conns.Stats(); st.Idle != 2 || st.Evicted != 1 {
		t.Errorf("Stats %+v, want 2 idle and 1 evicted", st)
	}
}

// The idle-connection attack (20,600 keep-alive connections held until
// accept failed), scaled to what a test process holds: 2,000
// keep-alive connections from 200 addresses (127.0.0.2–201), each idle
// after one request. Behind the front door the server holds at most
// MaxConns (256) of them at once and at most MaxIdle (64) idle, and
// /healthz from another address is answered every time; as main wires a
// service it holds all 2,000.
func TestIdleConnectionsAreBounded(t *testing.T) {
	const hosts, perHost = 200, 10
	raiseFileLimit(t, 2*hosts*perHost+256)
	s := startService(t, door{conns: &connsConfig{MaxConns: 256, MaxConnsPerHost: 8, MaxIdle: 64}})
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	for h := range hosts {
		ip := fmt.Sprintf("127.0.0.%d", h+2)
		wg.Go(func() {
			for range perHost {
				c, err := dialer(ip).Dial("tcp", s.addr)
				if err != nil {
					continue
				}
				_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	hc := clientFrom("127.0.0.1")
	for i := range 10 {
		resp, err := hc.Get(s.url + "/healthz")
		if err != nil {
			t.Fatalf("/healthz try %d under %d idle connections: %v", i, len(held), err)
		}
		resp.Body.Close()
		hc.CloseIdleConnections() // a new connection each try, as a prober's
	}
	st := s.conns.Stats()
	t.Logf("%d connections opened; the server held at most %d at once; %+v", len(held), s.peak.Load(), st)
	if p := s.peak.Load(); p > 256 {
		t.Errorf("the server held %d connections at once, want at most MaxConns (256)", p)
	}
	if st.Idle > 64 {
		t.Errorf("%d connections idle, want at most MaxIdle (64)", st.Idle)
	}
}
