package redisstore_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tcpProxy forwards loopback TCP connections to a target address, and lets a
// test break the path on purpose:
//
//   - Cut closes every connection and closes each new one as soon as it is
//     accepted (Redis "down": connection reset or EOF at once);
//   - Stall stops forwarding: existing connections and new ones stay open
//     but nothing reaches the target and nothing comes back (a network
//     partition or a hung server: only timeouts end the wait);
//   - Restore closes whatever the outage left open and forwards again.
//
// The listening address stays the same throughout. Everything is closed, and
// every goroutine finished, in t.Cleanup.
type tcpProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu     sync.Mutex
	mode   proxyMode
	conns  map[net.Conn]*proxyPair // by client-side connection
	closed bool
	wg     sync.WaitGroup
}

type proxyMode int

const (
	proxyUp proxyMode = iota
	proxyCut
	proxyStalled
)

// proxyPair is one client connection and, while forwarding, its connection
// to the target.
type proxyPair struct {
	client  net.Conn
	up      net.Conn    // nil when not forwarding
	stalled atomic.Bool // swallow what the client sends, forward nothing
}

// newTCPProxy starts a proxy to target on a free loopback port.
func newTCPProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &tcpProxy{t: t, ln: ln, target: target, conns: map[net.Conn]*proxyPair{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr returns the proxy's listening address.
func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and refuses new ones until Restore.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = proxyCut
	p.closeAll()
}

// Stall stops forwarding in both directions until Restore: connections stay
// open, what clients send is swallowed and nothing comes back.
func (p *tcpProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = proxyStalled
	for _, pp := range p.conns {
		pp.stalled.Store(true)
		if pp.up != nil {
			pp.up.Close()
		}
	}
}

// Restore forwards new connections again, closing any left open by a stall
// so that clients reconnect through a working path.
func (p *tcpProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = proxyUp
	p.closeAll()
}

// closeAll closes every connection; p.mu must be held.
func (p *tcpProxy) closeAll() {
	for c, pp := range p.conns {
		c.Close()
		if pp.up != nil {
			pp.up.Close()
		}
		delete(p.conns, c)
	}
}

func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.closeAll()
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.t.Errorf("proxy accept: %v", err)
			}
			return
		}
		p.mu.Lock()
		if p.closed || p.mode == proxyCut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		pp := &proxyPair{client: c}
		pp.stalled.Store(p.mode == proxyStalled)
		p.conns[c] = pp
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(pp)
	}
}

// serve forwards pp until either side closes; while pp is stalled it
// swallows what the client sends instead.
func (p *tcpProxy) serve(pp *proxyPair) {
	defer p.wg.Done()
	defer p.drop(pp)
	if !pp.stalled.Load() {
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.conns[pp.client] != pp || pp.stalled.Load() { // the mode changed while dialing
			p.mu.Unlock()
			up.Close()
		} else {
			pp.up = up
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(pp.client, up)
				if !pp.stalled.Load() {
					pp.client.Close() // the target hung up: so does the proxy
				}
			}()
		}
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := pp.client.Read(buf)
		if n > 0 && !pp.stalled.Load() && pp.up != nil {
			if _, werr := pp.up.Write(buf[:n]); werr != nil && !pp.stalled.Load() {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *tcpProxy) drop(pp *proxyPair) {
	p.mu.Lock()
	if p.conns[pp.client] == pp {
		delete(p.conns, pp.client)
	}
	p.mu.Unlock()
	pp.client.Close()
	if pp.up != nil {
		pp.up.Close()
	}
}
