package frontdoor

import (
	"net"
	"net/http"
)

// ConnState is the http.Server's ConnState hook (call it from yours if you
// have one). It keeps the connections waiting for a request, new or idle
// between keep-alive requests, in the order they began to wait, and closes
// the one that has waited longest whenever more than MaxIdle wait: 20,000
// idle connections cost what MaxIdle connections cost, and a new
// connection (the one that waited least) is never the one closed. A
// keep-alive client whose idle connection is closed opens another, as it
// does after the server's IdleTimeout.
func (c *Conns) ConnState(nc net.Conn, state http.ConnState) {
	var evict []net.Conn
	c.mu.Lock()
	switch state {
	case http.StateNew, http.StateIdle:
		if e, ok := c.where[nc]; ok {
			c.quiet.MoveToBack(e)
		} else {
			c.where[nc] = c.quiet.PushBack(nc)
		}
		for c.maxIdle >= 0 && c.quiet.Len() > c.maxIdle {
			oldest := c.quiet.Remove(c.quiet.Front()).(net.Conn)
			delete(c.where, oldest)
			evict = append(evict, oldest)
			c.evicted++
		}
	case http.StateActive, http.StateHijacked, http.StateClosed:
		if e, ok := c.where[nc]; ok {
			c.quiet.Remove(e)
			delete(c.where, nc)
		}
	}
	c.mu.Unlock()
	for _, old := range evict {
		_ = old.Close() // the server sees the connection end and forgets it
	}
}
