package middleware_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// replyCutter is a loopback TCP proxy in front of a store that forwards
// every request, so the store acts on it, and can lose the replies: cut
// resets the client's connection when a reply arrives (the command was
// applied, its reply lost to a connection reset), and delay holds each
// reply back (the reply arrives after the caller's deadline).
type replyCutter struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	delay  atomic.Int64 // nanoseconds
	cuts   atomic.Int64 // replies lost to a reset
	mu     sync.Mutex
	conns  []net.Conn
}

func newReplyCutter(t *testing.T, target string) *replyCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyCutter{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go p.accept()
	return p
}

func (p *replyCutter) addr() string { return p.ln.Addr().String() }

func (p *replyCutter) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); s.Close() }()
		go p.replies(c, s)
	}
}

// replies copies the server's replies to the client, unless told to lose
// or delay them.
func (p *replyCutter) replies(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if p.cut.Load() {
				p.cuts.Add(1)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // a reset, not a clean close
				}
				return
			}
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
