package frontdoor

import (
	"io"
	"net/http"
)

// Hold returns h with the connection of each request it serves held once
// the request's body has arrived whole (at once for a request without a
// body), until the server is done with the request (its answer written):
// a held connection is never closed to make room for another
// (connsConfig.MaxConns). Wrap in it the handler that claims keys (the
// idempotency middleware, and what verifies a body before it): a request
// whose body has arrived is work, and may hold a claimed key; one whose
// body is still arriving is waiting, and its connection may go under
// contention. The connection is found by the request's RemoteAddr as the
// server set it (a handler in front of Hold must not rewrite it), and is
// let go through ConnState; a request on a connection the Conns did not
// accept is served unheld.
func (c *connBounds) Hold(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		cn := c.byAddr[r.RemoteAddr]
		c.mu.Unlock()
		if cn != nil {
			if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
				c.hold(cn)
			} else {
				r = r.WithContext(r.Context()) // net/http keeps reading its own request's Body
				r.Body = &heldBody{ReadCloser: r.Body, cn: cn, left: r.ContentLength}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// hold counts cn held, once.
func (c *connBounds) hold(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn.held || cn.gone {
		return
	}
	cn.held = true
	c.held++
	if cn.host != nil {
		cn.host.held++
	}
}

// heldBody holds its connection when the body has been read whole: at its
// end, or at its declared length.
type heldBody struct {
	io.ReadCloser
	cn   *conn
	left int64 // bytes still to come (negative: unknown)
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if err == io.EOF || b.left == 0 {
		b.cn.c.hold(b.cn)
	}
	return n, err
}
