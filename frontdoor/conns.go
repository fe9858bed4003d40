package frontdoor

import (
	"container/list"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/ratelog"
)

// Defaults for the zero fields of ConnsConfig, and for the server beside it.
const (
	DefaultMaxConns        = 1024
	DefaultMaxConnsPerHost = 8
	DefaultMaxIdle         = 256

	// DefaultIdleTimeout is the http.Server.IdleTimeout to serve with: a
	// keep-alive connection waits this long for its next request. (MaxIdle
	// bounds how many wait; this, how long.)
	DefaultIdleTimeout = 30 * time.Second
)

// ConnsConfig configures a Conns. Zero fields mean the defaults; a negative
// bound means none.
type ConnsConfig struct {
	// MaxConns bounds the connections open at once. Past it, Accept waits
	// until one closes (golang.org/x/net/netutil.LimitListener): the
	// connections queue in the kernel, which costs the process nothing.
	// Keep it under the process's file descriptor limit (ulimit -n).
	// Default DefaultMaxConns (1024): at the 20–35 KB a connection of
	// net/http costs, some 36 MB.
	MaxConns int

	// MaxConnsPerHost bounds the connections open at once from one host:
	// an IPv4 address, or an IPv6 /64 (one subscriber's allocation). A
	// connection past it is closed as soon as it is accepted, with a reset:
	// no goroutine, no buffer, no TIME_WAIT. Default DefaultMaxConnsPerHost
	// (8), half of a client's share of middleware.Admission's default 64
	// requests in flight, so that fewer than eight hosts cannot hold them
	// all with slow requests. Behind a proxy every connection comes from
	// the proxy: set it negative there, and bound hosts at the proxy.
	MaxConnsPerHost int

	// MaxIdle bounds the connections waiting for a request: new ones that
	// have not sent a whole request header yet, and keep-alive ones
	// between requests. Past it the one that has waited longest is closed.
	// It needs ConnState wired into the http.Server. Default
	// DefaultMaxIdle (256).
	MaxIdle int

	// Logger receives a Warn record per connection refused at accept, at
	// most 10 a minute (the next record written counts those not
	// written). Default: none.
	Logger *slog.Logger
}

// A Conns bounds a server's connections before any request exists: in
// all, per host, and waiting for a request. Its [Conns.Listener] wraps the
// server's listener, and its [Conns.ConnState] is the http.Server's
// ConnState. It is safe for concurrent use.
type Conns struct {
	maxConns, perHost, maxIdle int
	refusals                   *ratelog.Logger

	mu      sync.Mutex
	hosts   map[netip.Addr]int // open connections of each host
	open    int
	peak    int
	refused uint64
	quiet   list.List // connections waiting for a request, the longest waiting first
	where   map[net.Conn]*list.Element
	evicted uint64
}

// ConnsStats is a snapshot of a Conns.
type ConnsStats struct {
	Open     int    // connections open (accepted through Listener, not closed)
	PeakOpen int    // the most open at once so far
	Hosts    int    // hosts with a connection open
	Refused  uint64 // connections closed at accept: their host had MaxConnsPerHost open
	Idle     int    // connections waiting for a request (through ConnState)
	Evicted  uint64 // idle connections closed to keep to MaxIdle
}

// NewConns returns a Conns, or an error when a bound cannot be met: MaxIdle
// must leave room for connections serving requests (under MaxConns).
func NewConns(cfg ConnsConfig) (*Conns, error) {
	c := &Conns{
		maxConns: orDefault(cfg.MaxConns, DefaultMaxConns),
		perHost:  orDefault(cfg.MaxConnsPerHost, DefaultMaxConnsPerHost),
		maxIdle:  orDefault(cfg.MaxIdle, DefaultMaxIdle),
		refusals: ratelog.New(cfg.Logger, 0, 0),
		hosts:    map[netip.Addr]int{},
		where:    map[net.Conn]*list.Element{},
	}
	if c.maxConns > 0 && (c.maxIdle < 0 || c.maxIdle >= c.maxConns) {
		return nil, errors.New("frontdoor: ConnsConfig.MaxIdle must be under MaxConns, or idle connections could hold them all")
	}
	return c, nil
}

// Stats returns a snapshot of the connections.
func (c *Conns) Stats() ConnsStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ConnsStats{Open: c.open, PeakOpen: c.peak, Hosts: len(c.hosts), Refused: c.refused, Idle: c.quiet.Len(), Evicted: c.evicted}
}

// orDefault returns v, or def when v is zero.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
