package frontdoor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// door is what a test server is wired with; nil fields are left out.
type door struct {
	// door, when set, is the whole front door (New), and conns
	// and rate are not used.
	door  *Config
	conns *connsConfig
	rate  *bodyRateConfig
	// block, when set, holds each handler run until it is closed.
	block chan struct{}
}

// service is a receiving service as a team wires one: an http.Server with
// the idempotency middleware over memstore, behind the front door or the
// pieces of it given, on 127.0.0.1.
type service struct {
	url     string
	addr    string
	store   *memstore.Store
	door    *Door
	conns   *connBounds
	rate    *bodyRate
	runs    atomic.Int64 // handler runs
	flying  atomic.Int64 // requests in flight, under the pieces of the front door
	blocked atomic.Int64 // handler runs waiting on door.block
	open    atomic.Int64 // connections accepted and not closed
	peak    atomic.Int64
}

// countingListener counts the connections accepted and not closed, under
// anything the test wires around it.
type countingListener struct {
	net.Listener
	s *service
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.s.open.Add(1)
	for p := l.s.peak.Load(); n > p && !l.s.peak.CompareAndSwap(p, n); p = l.s.peak.Load() {
	}
	return &countedConn{Conn: c, s: l.s}, nil
}

type countedConn struct {
	net.Conn
	s    *service
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.s.open.Add(-1) })
	return c.Conn.Close()
}

// SetLinger lets the front door reset a connection it refuses.
func (c *countedConn) SetLinger(sec int) error { return c.Conn.(*net.TCPConn).SetLinger(sec) }

// CloseWrite lets the server shut the sending side, as on a *net.TCPConn.
func (c *countedConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

func startService(t *testing.T, d door) *service {
	t.Helper()
	s := &service{store: new(memstore.Store)}
	idem, err := middleware.New(s.store, middleware.Config{})
	if err != nil {
		t.Fatal(err)
	}
	post := idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.runs.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		if d.block != nil {
			s.blocked.Add(1)
			<-d.block
		}
		w.WriteHeader(http.StatusCreated)
	}))
	inner := post
	post = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.flying.Add(1)
		defer s.flying.Add(-1)
		inner.ServeHTTP(w, r)
	})
	if d.door != nil {
		if s.door, err = New(*d.door); err != nil {
			t.Fatal(err)
		}
		post = s.door.Handler(post)
	}
	if d.rate != nil && d.door == nil {
		if s.rate, err = newBodyRate(*d.rate); err != nil {
			t.Fatal(err)
		}
		post = s.rate.Handler(post)
	}
	if d.conns != nil && d.door == nil {
		if s.conns, err = newConns(*d.conns); err != nil {
			t.Fatal(err)
		}
		post = s.conns.Hold(post)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /features", post)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          nil,
	}
	var connState func(net.Conn, http.ConnState) // nil: none
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr, s.url = ln.Addr().String(), "http://"+ln.Addr().String()
	ln = &countingListener{Listener: ln, s: s}
	switch {
	case d.door != nil:
		ln = s.door.Listener(ln)
		srv = s.door.Server(mux)
		connState = srv.ConnState
	case d.conns != nil:
		ln = s.conns.Listener(ln)
		connState = s.conns.ConnState
		srv.IdleTimeout = defaultIdleTimeout
	}
	srv.ConnState = connState
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// dialer returns a dialer whose connections come from the loopback
// address ip.
func dialer(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
}

// clientFrom returns an HTTP client whose connections come from ip.
func clientFrom(ip string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: dialer(ip).DialContext, MaxIdleConnsPerHost: 2}, Timeout: 20 * time.Second}
}

// readStatus reads one response from c and returns its status, or 0 and
// the error.
func readStatus(c net.Conn) (*http.Response, error) {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// waitFor waits until cond holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// raiseFileLimit makes sure the process may open need file descriptors,
// raising its soft limit up to the hard one; it fails the test when the
// hard limit is lower.
func raiseFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		t.Fatalf("this test needs %d file descriptors; the hard limit (ulimit -Hn) is %d", need, lim.Max)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// slowAttack keeps perHost connections from each of hosts sending slow
// bodies to addr: each declares 100 bytes and sends one byte every 2 s;
// when the server answers or closes, it connects again at once.
type slowAttack struct {
	mu       sync.Mutex
	statuses map[int]int // answers the attackers got; 0: closed without one
	started  atomic.Int64
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

func startSlowAttack(addr string, hosts []string, perHost int) *slowAttack {
	ctx, cancel := context.WithCancel(context.Background())
	a := &slowAttack{statuses: map[int]int{}, cancel: cancel}
	for _, host := range hosts {
		d := dialer(host)
		for i := range perHost {
			a.wg.Go(func() { a.loop(ctx, d, fmt.Sprintf("slow-%s-%d", host, i), addr) })
		}
	}
	return a
}

func (a *slowAttack) loop(ctx context.Context, d *net.Dialer, key, addr string) {
	for n := 0; ctx.Err() == nil; n++ {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		_, err = fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: %s-%d\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", key, n)
		if err == nil {
			a.started.Add(1)
			go func() {
				for ctx.Err() == nil {
					time.Sleep(2 * time.Second)
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}()
			resp, err := readStatus(c)
			status := 0
			if err == nil {
				status = resp.StatusCode
			}
			a.mu.Lock()
			a.statuses[status]++
			a.mu.Unlock()
		}
		stop()
		c.Close()
	}
}

func (a *slowAttack) stop() map[int]int {
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.statuses
}

// isClosed reports whether a read on c ends (EOF or reset) within limit,
// rather than timing out.
func isClosed(c net.Conn, limit time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
