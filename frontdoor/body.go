package frontdoor

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// guard is the state of one request under a BodyRate, allocated in one
// piece: the body the handlers read (a *body) and the writer they answer
// through (a *writer) are the same memory.
type guard struct {
	rate        *BodyRate
	w           http.ResponseWriter
	ctl         *http.ResponseController
	src         io.ReadCloser
	start       time.Time
	length      int64     // Content-Length; -1: unknown
	got         int64     // bytes received
	set         time.Time // the read deadline set last
	ended       bool      // the body ended (EOF or error): no more deadlines
	unsupported bool      // the writer has no read deadlines
	tripped     atomic.Bool
	wrote       bool // the handlers' answer went out (or the connection was hijacked)
	answered    bool // the 408 went out
	hj          hijacker
}

// body is the request body under a BodyRate.
type body guard

// Read reads from the body with a read deadline that its next byte must
// meet: Grace + (bytes so far + 1) / MinRate after the request began.
func (b *body) Read(p []byte) (int, error) {
	g := (*guard)(b)
	if g.tripped.Load() {
		return 0, ErrSlowBody
	}
	if !g.ended && !g.unsupported && len(p) > 0 {
		d := g.start.Add(g.rate.allowance(g.got + 1))
		if !d.Equal(g.set) {
			if err := g.ctl.SetReadDeadline(d); err != nil {
				g.unsupported = errors.Is(err, http.ErrNotSupported)
			} else {
				g.set = d
			}
		}
	}
	n, err := g.src.Read(p)
	g.got += int64(n)
	switch {
	case err != nil && !g.ended && !g.set.IsZero() && errors.Is(err, os.ErrDeadlineExceeded):
		g.tripped.Store(true)
		g.ended = true
		return n, ErrSlowBody
	case err != nil || g.length >= 0 && g.got >= g.length:
		g.end()
	}
	return n, err
}

// end clears the read deadline once the body has ended, so that no later
// read on the connection fails on it and cancels the request's context
// (net/http clears it too when it starts its read in the background at
// the body's EOF; a body whose last bytes came without EOF does not).
func (g *guard) end() {
	if g.ended {
		return
	}
	g.ended = true
	if !g.set.IsZero() {
		_ = g.ctl.SetReadDeadline(time.Time{})
	}
}

func (b *body) Close() error { return (*guard)(b).src.Close() }
