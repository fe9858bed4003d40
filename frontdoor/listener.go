package frontdoor

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"golang.org/x/net/netutil"

	"github.com/geoidem/geoidem/internal/clientaddr"
)

// Listener returns ln bounded by c: at most MaxConns connections open at
// once (Accept waits for one to close), and at most MaxConnsPerHost from
// one host (a connection past it is closed at once, and Accept goes on to
// the next). Serve the http.Server on it.
func (c *Conns) Listener(ln net.Listener) net.Listener {
	ln = &hostListener{Listener: ln, c: c}
	if c.maxConns > 0 {
		// The kept implementation of a counting semaphore around Accept;
		// it cannot count per host, which hostListener (inside it) does.
		ln = netutil.LimitListener(ln, c.maxConns)
	}
	return ln
}

// hostListener accepts connections, closing at once those whose host has
// MaxConnsPerHost open, and counts the others until they close.
type hostListener struct {
	net.Listener
	c *Conns
}

func (l *hostListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, known := hostOf(nc.RemoteAddr())
		if l.c.admit(host, known) {
			return &conn{Conn: nc, c: l.c, host: host, known: known}, nil
		}
		// A reset frees the socket at once (no TIME_WAIT on our side), and
		// nothing else was spent on it: no goroutine, no buffer.
		if tc, ok := nc.(interface{ SetLinger(int) error }); ok { // *net.TCPConn
			_ = tc.SetLinger(0)
		}
		_ = nc.Close()
		l.c.refusals.Warn(context.Background(), "connection refused: its host has its connections open", slog.String("host", host.String()))
	}
}

// admit counts a new connection of host, or reports false when the host
// already has MaxConnsPerHost open. A connection whose host is unknown (not
// TCP) is counted only in the total.
func (c *Conns) admit(host netip.Addr, known bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if known {
		n := c.hosts[host]
		if c.perHost >= 0 && n >= c.perHost {
			c.refused++
			return false
		}
		c.hosts[host] = n + 1
	}
	c.open++
	c.peak = max(c.peak, c.open)
	return true
}

// release gives back what admit counted.
func (c *Conns) release(host netip.Addr, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	if known {
		if n := c.hosts[host] - 1; n > 0 {
			c.hosts[host] = n
		} else {
			delete(c.hosts, host)
		}
	}
}

// hostOf returns the host a remote address counts against
// (clientaddr.Host): its IPv4 address (an IPv4-mapped IPv6 address is the
// IPv4 one), or its IPv6 /64, as one subscriber is given a /64 and can use
// any address in it.
func hostOf(a net.Addr) (netip.Addr, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return netip.Addr{}, false
	}
	return clientaddr.Host(ip), true
}

// conn is a connection the hostListener counted: closing it, once, gives
// the count back.
type conn struct {
	net.Conn
	c     *Conns
	host  netip.Addr
	known bool
	once  sync.Once
}

func (cn *conn) Close() error {
	err := cn.Conn.Close()
	cn.once.Do(func() { cn.c.release(cn.host, cn.known) })
	return err
}
