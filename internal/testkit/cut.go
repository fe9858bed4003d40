// This file: a loopback TCP proxy that can break the path to a store
// on cue, for outage and chaos tests:
//
//   - Cut resets every connection it carries and every new one it accepts
//     (SO_LINGER 0, so the client reads a TCP RST): the store is down;
//
//   - Stall keeps every connection, old and new, open but forwards nothing
//     either way: what clients send is swallowed and nothing comes back, so
//     only their timeouts end the wait (a partition or a hung server);
//
//   - Restore forwards again, resetting what a stall left open so that
//     clients reconnect through a working path;
//
//   - Retarget points it at another server, resetting every connection: a
//     failover behind a fixed address.
//
//     p, err := NewCutter("127.0.0.1:6379")
//     ...
//     defer p.Close()
//     // point the client at p.Addr() ...
//     p.Cut()     // the store is gone: resets, refused connections
//     p.Restore() // the store is back
//
// It listens on 127.0.0.1 and forwards only to a loopback target. It uses
// the standard library only.

package testkit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNotLoopback is returned (wrapped) by New for a target that is not on
// loopback.
var ErrNotLoopback = errors.New("tcpcut: target is not a loopback address")

// dialTimeout bounds the dial to the target.
const dialTimeout = 2 * time.Second

// CutStats counts what a Cutter did.
type CutStats struct {
	Accepted uint64 // connections accepted
	Refused  uint64 // connections reset at once because the proxy was cut
	Severed  uint64 // live connections reset by Cut
	Cuts     uint64 // calls to Cut that found the proxy restored
	Stalls   uint64 // calls to Stall that found the proxy forwarding
}

// Cutter forwards TCP connections from its own loopback address to a target
// until it is cut. Its methods are safe for concurrent use.
type Cutter struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	cut     bool
	stalled bool
	closed  bool
	pairs   map[*pair]struct{} // every live connection pair
	stats   CutStats
}

// New starts a proxy on 127.0.0.1 (a free port) in front of target, a
// host:port whose host is a loopback IP address or "localhost".
func NewCutter(target string) (*Cutter, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("tcpcut: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpcut: %w", err)
	}
	p := &Cutter{target: target, ln: ln, pairs: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's address, "127.0.0.1:port".
func (p *Cutter) Addr() string { return p.ln.Addr().String() }

// Cut resets every connection through the proxy and makes it reset every
// new one until Restore.
func (p *Cutter) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.stats.Cuts++
	}
	p.cut = true
	for pr := range p.pairs {
		p.stats.Severed++
		pr.abort()
		delete(p.pairs, pr)
	}
}

// Stall stops forwarding until Restore: connections stay open, what
// clients send is swallowed and nothing comes back. Their connections to
// the target are reset.
func (p *Cutter) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled && !p.cut {
		p.stats.Stalls++
	}
	p.stalled = true
	for pr := range p.pairs {
		pr.stall()
	}
}

// Restore ends a Cut or a Stall: new connections are forwarded again, and
// those a stall left open are reset so that their clients reconnect.
func (p *Cutter) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.stalled = false, false
	for pr := range p.pairs {
		if pr.stalled.Load() {
			pr.abort()
			delete(p.pairs, pr)
		}
	}
}

// Retarget makes the proxy forward new connections to target (a loopback
// host:port, as for New) and resets every live connection, so that clients
// reconnect to the new target: a failover behind a fixed address.
func (p *Cutter) Retarget(target string) error {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("tcpcut: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%w: %q", ErrNotLoopback, target)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
	for pr := range p.pairs {
		pr.abort()
		delete(p.pairs, pr)
	}
	return nil
}

// Stats returns what the proxy has done so far.
func (p *Cutter) Stats() CutStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops the proxy, resets every connection through it and waits for
// its goroutines to end.
func (p *Cutter) Close() error {
	p.mu.Lock()
	p.closed = true
	for pr := range p.pairs {
		pr.abort()
		delete(p.pairs, pr)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Cutter) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // a transient accept error (e.g. EMFILE)
			continue
		}
		p.mu.Lock()
		p.stats.Accepted++
		switch {
		case p.closed:
			p.mu.Unlock()
			abort(c)
			continue
		case p.cut:
			p.stats.Refused++
			p.mu.Unlock()
			abort(c)
			continue
		}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve dials the target for client connection c, unless the proxy is
// stalled, and copies both ways until either side ends or the proxy is cut;
// while the pair is stalled it swallows what the client sends instead.
func (p *Cutter) serve(c net.Conn) {
	defer p.wg.Done()
	pr := &pair{client: c}
	p.mu.Lock()
	stalled, target := p.stalled, p.target
	p.mu.Unlock()
	if !stalled {
		t, err := net.DialTimeout("tcp", target, dialTimeout)
		if err != nil {
			abort(c)
			return
		}
		pr.target = t
	}
	p.mu.Lock()
	if p.cut || p.closed {
		p.mu.Unlock()
		pr.abort()
		return
	}
	if p.stalled { // stalled before or while dialing
		pr.stall()
	}
	p.pairs[pr] = struct{}{}
	p.mu.Unlock()

	down := make(chan struct{})
	if pr.target != nil {
		go func() { // target to client
			_, _ = io.Copy(c, pr.target)
			if tc, ok := c.(*net.TCPConn); ok && !pr.stalled.Load() {
				_ = tc.CloseWrite() // pass the half-close on
			}
			close(down)
		}()
	} else {
		close(down)
	}
	buf := make([]byte, 32<<10)
	for { // client to target, or into the void while stalled
		n, err := c.Read(buf)
		if n > 0 && !pr.stalled.Load() {
			if _, werr := pr.target.Write(buf[:n]); werr != nil && !pr.stalled.Load() {
				break
			}
		}
		if err != nil {
			if tc, ok := pr.target.(*net.TCPConn); ok && !pr.stalled.Load() {
				_ = tc.CloseWrite()
			}
			break
		}
	}
	<-down
	p.mu.Lock()
	_, live := p.pairs[pr]
	delete(p.pairs, pr)
	p.mu.Unlock()
	if live { // ended by its peers, not aborted: close gracefully
		c.Close()
		if pr.target != nil {
			pr.target.Close()
		}
	}
}

// pair is one client connection and, unless it was accepted while the
// proxy was stalled, its connection to the target.
type pair struct {
	client, target net.Conn
	stalled        atomic.Bool
}

// stall makes pr swallow what its client sends, and resets its target.
func (pr *pair) stall() {
	pr.stalled.Store(true)
	if pr.target != nil {
		abort(pr.target)
	}
}

func (pr *pair) abort() {
	abort(pr.client)
	if pr.target != nil {
		abort(pr.target)
	}
}

// abort closes c with SO_LINGER 0, so that the peer reads a reset.
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
