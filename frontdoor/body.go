package frontdoor

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// The states of a body under a bodyRate. A body leaves arriving once, by
// a compare-and-swap, so that a body that ended and one cut off (cutBody,
// from another goroutine) exclude each other.
const (
	arriving int32 = iota
	ended          // read in full, or failed: no more deadlines
	slow           // fell behind the rate: cut off
	makeRoom       // cut off by cutBody, to make room for another client
)

// guard is the state of one request under a bodyRate, allocated in one
// piece: the body the handlers read (a *body) and the writer they answer
// through (a *writer) are the same memory.
type guard struct {
	rate        *bodyRate
	w           http.ResponseWriter
	ctl         *http.ResponseController
	src         io.ReadCloser
	start       time.Time
	length      int64        // Content-Length; -1: unknown
	got         atomic.Int64 // bytes received (read by cutBody's callers too)
	set         time.Time    // the read deadline set last
	state       atomic.Int32
	unsupported atomic.Bool // the writer has no read deadlines
	tripped     atomic.Bool // cut off (slow or makeRoom): reads fail, the answer is the 408
	wrote       bool        // the handlers' answer went out (or the connection was hijacked)
	answered    bool        // the 408 went out
	hj          hijacker
}

// body is the request body under a bodyRate.
type body guard

// Read reads from the body with a read deadline that its next byte must
// meet: Grace + (bytes so far + 1) / MinRate after the request began.
func (b *body) Read(p []byte) (int, error) {
	g := (*guard)(b)
	if g.tripped.Load() {
		return 0, errSlowBody
	}
	if g.state.Load() == arriving && !g.unsupported.Load() && len(p) > 0 {
		d := g.start.Add(g.rate.allowance(g.got.Load() + 1))
		if !d.Equal(g.set) {
			if err := g.ctl.SetReadDeadline(d); err != nil {
				g.unsupported.Store(errors.Is(err, http.ErrNotSupported))
			} else {
				g.set = d
			}
		}
		// cutBody trips the guard and then sets a deadline in the past;
		// a cut that came before the deadline above was set is seen here,
		// one that came after it unblocks the read below.
		if g.tripped.Load() {
			return 0, errSlowBody
		}
	}
	n, err := g.src.Read(p)
	got := g.got.Add(int64(n))
	switch {
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded) && (g.tripped.Load() || !g.set.IsZero() && g.state.CompareAndSwap(arriving, slow)):
		g.tripped.Store(true)
		return n, errSlowBody
	case err != nil || g.length >= 0 && got >= g.length:
		g.end()
	}
	return n, err
}

// end clears the read deadline once the body has ended, so that no later
// read on the connection fails on it and cancels the request's context
// (net/http clears it too when it starts its read in the background at
// the body's EOF; a body whose last bytes came without EOF does not).
func (g *guard) end() {
	if !g.state.CompareAndSwap(arriving, ended) {
		return
	}
	if !g.set.IsZero() {
		_ = g.ctl.SetReadDeadline(time.Time{})
	}
}

func (b *body) Close() error { return (*guard)(b).src.Close() }

// cutBody cuts off r's body now, while it is still arriving: its read in
// progress, or its next one, fails with errSlowBody, and the request is
// answered 408 [ProblemSlowBody] (whatever the handlers inside made of the
// failed read) and its connection closed, as if it had fallen behind the
// rate. The handlers never saw the whole body, so the idempotency
// middleware claimed nothing for it, and its sender retries. It reports
// whether it cut: not when no bodyRate guards r's body directly, when the
// body has ended (read in full or failed: the request may have claimed its
// key and be running), or when the server's writer has no read deadlines.
// It is safe to call from any goroutine.
func cutBody(r *http.Request) bool {
	g, ok := r.Body.(*body)
	if !ok {
		return false
	}
	return (*guard)(g).cut()
}

// cut cuts off a body still arriving; see cutBody.
func (g *guard) cut() bool {
	if g.unsupported.Load() || !g.state.CompareAndSwap(arriving, makeRoom) {
		return false
	}
	g.tripped.Store(true)
	_ = g.ctl.SetReadDeadline(time.Unix(1, 0)) // unblocks a read in progress
	return true
}
