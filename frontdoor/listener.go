package frontdoor

import (
	"container/list"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"github.com/geoidem/geoidem/internal/clientaddr"
)

// Listener returns ln bounded by c (see connsConfig.MaxConns and
// MaxConnsPerHost): below MaxConns every connection is accepted; at it a
// new connection takes the place of an idle one, or of a busy one of the
// host holding the most, or waits for room, or is reset when its own host
// holds the most. Serve the http.Server on it. Closing it wakes an Accept
// waiting for room.
func (c *connBounds) Listener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, c: c, done: make(chan struct{})}
}

// listener accepts connections as Conns bounds them, and counts them until
// they close.
type listener struct {
	net.Listener
	c         *connBounds
	closeOnce sync.Once
	done      chan struct{}
}

func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.c.mu.Lock()
		l.c.room.Broadcast()
		l.c.mu.Unlock()
	})
	return l.Listener.Close()
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cn, err := l.c.accept(nc, l.done)
		if cn != nil || err != nil {
			return cn, err
		}
	}
}

// accept counts nc when there is room or room can be made, waiting for
// room when none can; it returns nil (nc closed) when nc is refused, and
// net.ErrClosed when done closes while it waits.
func (c *connBounds) accept(nc net.Conn, done <-chan struct{}) (*conn, error) {
	cn := &conn{Conn: nc, c: c, addr: nc.RemoteAddr().String()}
	var key netip.Prefix
	if ip, ok := addrOf(nc.RemoteAddr()); ok {
		key = clientaddr.Prefix(ip)
		cn.trusted = c.trustedAddr(ip)
	}
	var victims []*conn
	refused := false
	defer func() {
		// The sockets are closed, and the log written, outside the lock.
		if refused {
			reset(nc)
			c.log.Warn(context.Background(), "connection refused: the service is full and its host holds its connections open", slog.String("host", key.String()))
		}
		for _, v := range victims {
			if v.reset {
				c.log.Warn(context.Background(), "connection closed to make room: its host holds the most", slog.String("host", v.host.key.String()))
			}
		}
		closeAll(victims)
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	waited := false
	for c.maxConns >= 0 && c.open+1 >= c.maxConns {
		select {
		case <-done:
			_ = nc.Close()
			return nil, net.ErrClosed
		default:
		}
		v, refuse := c.victim(key, cn.trusted)
		if refuse {
			c.count.Refused++
			refused = true
			return nil, nil
		}
		if v == nil {
			if !waited {
				waited = true
				c.count.Waited++
			}
			c.waiting++
			c.room.Wait()
			c.waiting--
			continue
		}
		if v.quiet != nil {
			c.count.ClosedIdle++
		} else {
			c.count.ClosedBusy++
			v.reset = true
		}
		c.forget(v)
		victims = append(victims, v)
	}
	c.open++
	c.peak = max(c.peak, c.open)
	if key.IsValid() {
		h := c.hosts[key]
		if h == nil {
			h = &hostSet{key: key}
			c.hosts[key] = h
		}
		cn.host, cn.inHost = h, h.conns.PushBack(cn)
	}
	c.byAddr[cn.addr] = cn
	cn.quiet = c.quiet.PushBack(cn) // waiting for its first request
	return cn, nil
}

// victim returns the connection to close to make room for a new one of
// host key (invalid: not TCP), or reports that the new one is to be
// refused, or neither (nil, false) when it is to wait. Room is only taken
// from a host that holds more than the newcomer's would (or from the
// newcomer's own idle connection): an idle connection first, of the host
// holding the most, the longest waiting; else the oldest busy connection,
// not held, of the host holding the most. c.mu is held.
func (c *connBounds) victim(key netip.Prefix, trusted bool) (*conn, bool) {
	mine := 0
	if h := c.hosts[key]; h != nil && key.IsValid() {
		mine = h.conns.Len()
	}
	if key.IsValid() && !trusted && c.perHost >= 0 && mine >= c.perHost {
		return nil, true
	}
	var idle *conn
	most := -1
	for e := c.quiet.Front(); e != nil; e = e.Next() {
		v := e.Value.(*conn)
		if v.held { // waiting as far as Conns knows, without ConnState wired
			continue
		}
		n := v.hostLen()
		if v.host != nil && v.host.key == key {
			n = mine + 1 // the newcomer's own: as good as any that gives room
		}
		if n > most {
			idle, most = v, n
		}
	}
	if idle != nil && most > mine {
		return idle, false
	}
	var top *hostSet
	for k, h := range c.hosts {
		if k != key && h.conns.Len() > h.held && (top == nil || h.conns.Len() > top.conns.Len()) {
			top = h
		}
	}
	if top == nil || top.conns.Len() <= mine+1 {
		return nil, false
	}
	for e := top.conns.Front(); e != nil; e = e.Next() {
		if v := e.Value.(*conn); !v.held && v.quiet == nil {
			return v, false
		}
	}
	return nil, false
}

// hostLen returns how many connections cn's host holds (0 when not TCP).
func (cn *conn) hostLen() int {
	if cn.host == nil {
		return 0
	}
	return cn.host.conns.Len()
}

// forget stops counting cn, once; c.mu is held. Whoever closes cn's
// socket, the count is given back first.
func (c *connBounds) forget(cn *conn) {
	if cn.gone {
		return
	}
	cn.gone = true
	c.open--
	if cn.host != nil {
		cn.host.conns.Remove(cn.inHost)
		if cn.held {
			cn.host.held--
		}
		if cn.host.conns.Len() == 0 {
			delete(c.hosts, cn.host.key)
		}
	}
	if cn.held {
		c.held--
	}
	if c.byAddr[cn.addr] == cn {
		delete(c.byAddr, cn.addr)
	}
	if cn.quiet != nil {
		c.quiet.Remove(cn.quiet)
		cn.quiet = nil
	}
	c.room.Broadcast()
}

// trustedAddr reports whether ip is a trusted proxy's.
func (c *connBounds) trustedAddr(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, n := range c.trusted {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// addrOf returns the IP address of a TCP remote address.
func addrOf(a net.Addr) (netip.Addr, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	return ip, ok
}

// reset closes nc with a reset: the socket is freed at once (no TIME_WAIT
// on our side), and the client knows it was not served.
func reset(nc net.Conn) {
	if tc, ok := nc.(interface{ SetLinger(int) error }); ok { // *net.TCPConn
		_ = tc.SetLinger(0)
	}
	_ = nc.Close()
}

// closeAll closes the sockets of connections closed to make room: an idle
// one plainly, a busy one with a reset. The server sees each end and
// forgets it.
func closeAll(victims []*conn) {
	for _, v := range victims {
		if v.reset {
			reset(v.Conn)
		} else {
			_ = v.Conn.Close()
		}
	}
}

// conn is a connection a Conns counts until the server is done with it.
// Its fields but Conn and addr are guarded by c.mu.
type conn struct {
	net.Conn
	c       *connBounds
	addr    string // RemoteAddr().String(), as http.Request.RemoteAddr
	trusted bool

	host   *hostSet
	inHost *list.Element
	quiet  *list.Element // in c.quiet while waiting for a request
	held   bool          // its request held (Hold), until the server is done with it
	gone   bool          // no longer counted
	reset  bool          // closed with a reset to make room
}

// Close gives the count back, then closes the socket.
func (cn *conn) Close() error {
	cn.c.mu.Lock()
	cn.c.forget(cn)
	cn.c.mu.Unlock()
	return cn.Conn.Close()
}

// CloseWrite is net/http's sign that it is done with the connection: it
// shuts the sending side after an answer, when it will not read the rest
// of the request, and closes the socket half a second later (so that the
// client reads the answer before a reset). The count is given back now,
// and the client sees the end at once.
func (cn *conn) CloseWrite() error {
	cn.c.mu.Lock()
	cn.c.forget(cn)
	cn.c.mu.Unlock()
	if cw, ok := cn.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
