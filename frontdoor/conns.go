package frontdoor

import (
	"container/list"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/ratelog"
)

// Defaults for the connection bounds of Config (each documented on its
// field), and for the server beside them.
const (
	defaultMaxConns        = 1024
	defaultMaxConnsPerHost = 8
	defaultMaxIdle         = 256

	// defaultIdleTimeout is the http.Server.IdleTimeout to serve with: a
	// keep-alive connection waits this long for its next request. (MaxIdle
	// bounds how many wait; this, how long.)
	defaultIdleTimeout = 30 * time.Second
)

// connsConfig configures a connBounds: Config's MaxConns, MaxConnsPerHost,
// MaxIdle and TrustedProxies. Zero fields mean the defaults; a negative
// bound means none.
type connsConfig struct {
	// MaxConns bounds the connections open at once, one of them kept for
	// the connection being accepted. While fewer are open, every
	// connection is accepted, however many its host holds. At the bound
	// (contention) a new connection takes the place of one open: the
	// connection that has waited longest for a request first, else a busy
	// one of the host holding the most (more than the newcomer's host
	// would), never one whose request is held (see [connBounds.Hold]); when none
	// can go, the new one waits (Accept waits) until one closes, or is
	// refused (see MaxConnsPerHost). Keep it under the process's file
	// descriptor limit (ulimit -n). Zero means 1024: at the 20–35 KB a
	// connection of net/http costs, some 36 MB.
	MaxConns int

	// MaxConnsPerHost bounds, under contention only, the connections of
	// the host holding the most: a new connection of a host that holds at
	// least this many, and at least as many as any other host, is closed as
	// soon as it is accepted, with a reset (no goroutine, no buffer, no
	// TIME_WAIT), rather than wait for room. A host is an IPv4 address or
	// an IPv6 /64 (an IPv6 /48 counts as four hosts at most). Zero means
	// 8. A trusted proxy's host (TrustedProxies) is never refused for it.
	MaxConnsPerHost int

	// MaxIdle bounds the connections waiting for a request: new ones that
	// have not sent a whole request header yet, and keep-alive ones
	// between requests. Past it the one that has waited longest is closed.
	// It needs ConnState wired into the http.Server. Zero means 256.
	MaxIdle int

	// TrustedProxies are the networks of reverse proxies in front of the
	// server: each of their connections carries many
	// clients' requests, so their host is never refused for
	// MaxConnsPerHost; its connections wait for room instead. Default:
	// none.
	TrustedProxies []netip.Prefix

	// Logger receives a Warn record per connection refused or closed to
	// make room, at most 10 a minute (the next record written counts those
	// not written). Default: none.
	Logger *slog.Logger
}

// A connBounds bounds a server's connections before any request exists: in
// all, per host under contention, and waiting for a request. Its
// [connBounds.Listener] wraps the server's listener, its [connBounds.ConnState] is
// the http.Server's ConnState, and its [connBounds.Hold] wraps the handlers
// whose requests must keep their connection. It is safe for concurrent
// use.
type connBounds struct {
	maxConns, perHost, maxIdle int
	trusted                    []netip.Prefix
	log                        *ratelog.Logger

	mu      sync.Mutex
	room    *sync.Cond                // signalled when a connection may have become closable, or closed
	hosts   map[netip.Prefix]*hostSet // the connections of each host
	byAddr  map[string]*conn          // by remote address, for Hold
	open    int
	peak    int
	held    int       // connections whose request is held
	waiting int       // Accepts waiting for room
	quiet   list.List // *conn waiting for a request, the longest waiting first
	count   connsStats
}

// hostSet is the connections of one host, the oldest first.
type hostSet struct {
	key   netip.Prefix
	conns list.List // *conn
	held  int
}

// connsStats is a snapshot of a connBounds. The counters of connections
// refused or closed are by reason: each is what a metric of connections
// closed by the front door counts under its reason.
type connsStats struct {
	Open     int // connections open (accepted through Listener, not closed)
	PeakOpen int // the most open at once so far
	Hosts    int // hosts with a connection open
	Idle     int // connections waiting for a request (through ConnState)
	Held     int // connections whose request is held (Hold)
	Waiting  int // new connections waiting for room (0 or 1 per listener)

	Refused    uint64 // new connections reset at accept under contention: their host held the most, at MaxConnsPerHost or more
	ClosedIdle uint64 // idle connections closed to make room for a new one under contention
	ClosedBusy uint64 // busy connections (request not held) of the host holding the most, closed to make room
	Evicted    uint64 // idle connections closed to keep to MaxIdle
	Waited     uint64 // new connections that waited for room
}

// newConns returns a connBounds, or an error when a bound cannot be met: MaxIdle
// must leave room for connections serving requests (under MaxConns).
func newConns(cfg connsConfig) (*connBounds, error) {
	c := &connBounds{
		maxConns: orDefault(cfg.MaxConns, defaultMaxConns),
		perHost:  orDefault(cfg.MaxConnsPerHost, defaultMaxConnsPerHost),
		maxIdle:  orDefault(cfg.MaxIdle, defaultMaxIdle),
		trusted:  cfg.TrustedProxies,
		log:      ratelog.New(cfg.Logger, 0, 0),
		hosts:    map[netip.Prefix]*hostSet{},
		byAddr:   map[string]*conn{},
	}
	c.room = sync.NewCond(&c.mu)
	if c.maxConns > 0 && (c.maxIdle < 0 || c.maxIdle >= c.maxConns) {
		return nil, errors.New("frontdoor: Config.MaxIdle must be under MaxConns, or idle connections could hold them all")
	}
	if c.maxConns == 1 {
		return nil, errors.New("frontdoor: Config.MaxConns must leave room for the connection being accepted")
	}
	return c, nil
}

// Stats returns a snapshot of the connections.
func (c *connBounds) Stats() connsStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.count
	s.Open, s.PeakOpen, s.Hosts, s.Idle, s.Held, s.Waiting = c.open, c.peak, len(c.hosts), c.quiet.Len(), c.held, c.waiting
	return s
}

// orDefault returns v, or def when v is zero.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
