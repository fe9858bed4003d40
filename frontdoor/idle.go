package frontdoor

import (
	"net"
	"net/http"
)

// ConnState is the http.Server's ConnState hook (call it from yours if you
// have one). It keeps the connections waiting for a request, new or idle
// between keep-alive requests, in the order they began to wait: under
// contention the one that has waited longest is the first closed to make
// room, and whenever more than MaxIdle wait it is closed: 20,000 idle
// connections cost what MaxIdle connections cost, and a new connection
// (the one that waited least) is never the one closed. A keep-alive client
// whose idle connection is closed opens another, as it does after the
// server's IdleTimeout. A connection the server wraps (crypto/tls) is
// found through its NetConn method. Wire it: without it, under contention
// every connection not held looks idle to the Conns, and MaxIdle is not
// kept.
func (c *connBounds) ConnState(nc net.Conn, state http.ConnState) {
	cn := unwrap(nc)
	if cn == nil || cn.c != c {
		return
	}
	var evict []*conn
	c.mu.Lock()
	if !cn.gone {
		switch state {
		case http.StateNew, http.StateIdle:
			c.unhold(cn) // its answer written
			if cn.quiet != nil {
				c.quiet.MoveToBack(cn.quiet)
			} else {
				cn.quiet = c.quiet.PushBack(cn)
			}
			c.room.Broadcast() // a connection to close for a waiting one
			for c.maxIdle >= 0 && c.quiet.Len() > c.maxIdle {
				oldest := c.quiet.Front().Value.(*conn)
				c.forget(oldest)
				evict = append(evict, oldest)
				c.count.Evicted++
			}
		case http.StateActive, http.StateHijacked:
			// A hijacked connection is its handler's, counted until the
			// handler closes it.
			if cn.quiet != nil {
				c.quiet.Remove(cn.quiet)
				cn.quiet = nil
			}
		case http.StateClosed:
			c.forget(cn)
		}
	}
	c.mu.Unlock()
	closeAll(evict)
}

// unwrap returns the conn under nc, or nil when nc is not one of a Conns.
func unwrap(nc net.Conn) *conn {
	for range 8 {
		switch v := nc.(type) {
		case *conn:
			return v
		case interface{ NetConn() net.Conn }:
			nc = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// unhold gives back what Hold counted for cn, if anything; c.mu is held.
func (c *connBounds) unhold(cn *conn) {
	if !cn.held || cn.gone {
		return
	}
	cn.held = false
	c.held--
	if cn.host != nil {
		cn.host.held--
	}
}
