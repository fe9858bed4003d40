package frontdoor

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/internal/hijack"
	"github.com/geoidem/geoidem/problem"
)

// writer is the response writer the handlers inside a bodyRate answer
// through. Until the body is cut off it passes everything on; after, the
// first thing the handlers write (their answer to the failed read, such as
// the idempotency middleware's 400) becomes the 408, and the rest is
// dropped. Unwrap gives http.ResponseController the writer beneath. It is
// never an http.Hijacker itself: a request whose writer can be hijacked
// answers through the guard's hijacker instead (writerFor), so that type
// assertions see what the server offers.
type writer guard

// hijacker is a writer that is an http.Hijacker too, for a request whose
// writer beneath is one (or unwraps to one). It lives in the guard, so
// choosing it allocates nothing.
type hijacker struct{ *writer }

// writerFor returns the ResponseWriter the handlers inside g answer
// through: its hijacker when the writer beneath can be hijacked, else its
// writer.
func writerFor(g *guard) http.ResponseWriter {
	if hijack.Possible(g.w) {
		g.hj.writer = (*writer)(g)
		return &g.hj
	}
	return (*writer)(g)
}

// Hijack takes the connection over; the handler's answer is then its own,
// and no 408 is written, whatever the body does.
func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.w).Hijack()
	if err == nil {
		h.wrote = true
	}
	return c, rw, err
}

func (w *writer) Header() http.Header { return w.w.Header() }

func (w *writer) WriteHeader(code int) {
	switch {
	case w.cut():
		w.answer()
	case w.answered:
	default:
		if code >= 200 || code == http.StatusSwitchingProtocols {
			w.wrote = true
		}
		w.w.WriteHeader(code)
	}
}

func (w *writer) Write(p []byte) (int, error) {
	switch {
	case w.cut():
		w.answer()
		return len(p), nil
	case w.answered:
		return len(p), nil
	}
	w.wrote = true
	return w.w.Write(p)
}

// FlushError flushes, after answering 408 if the body was cut off; it is
// what http.ResponseController.Flush calls.
func (w *writer) FlushError() error {
	if w.cut() {
		w.answer()
	}
	if !w.answered {
		w.wrote = true
	}
	return http.NewResponseController(w.w).Flush()
}

// Flush is FlushError for the handlers that look for an http.Flusher.
func (w *writer) Flush() { _ = w.FlushError() }

func (w *writer) Unwrap() http.ResponseWriter { return w.w }

// cut reports whether the body was cut off before the handlers' answer
// went out: the answer is then the 408.
func (w *writer) cut() bool { return !w.wrote && !w.answered && w.tripped.Load() }

// answer writes the 408, once, unless the handlers' answer went out first.
func (w *writer) answer() {
	if w.wrote || w.answered {
		return
	}
	w.answered = true
	g := (*guard)(w)
	w.w.Header().Set("Connection", "close")
	// The sender may send again once a body in its way has had its grace
	// to show it keeps the rate: by then, room has been made or freed.
	w.w.Header().Set("Retry-After", strconv.FormatInt(int64(max(time.Second, g.rate.grace+time.Second-1)/time.Second), 10))
	detail := fmt.Sprintf("The request body fell behind %d bytes a second after the first %v (%d bytes received), so it was cut off before it was read in full. Retry with the same key.",
		g.rate.rate, g.rate.grace, g.got.Load())
	if g.state.Load() == makeRoom {
		detail = fmt.Sprintf("The server was full of bodies still arriving, and this client had more of them arriving than another client that was waiting, so this one, the slowest (%d bytes received), was cut off before it was read in full. Retry with the same key.", g.got.Load())
	}
	problem.Write(w.w, problem.Details{
		Type:   ProblemSlowBody,
		Title:  "Request body too slow",
		Status: http.StatusRequestTimeout,
		Detail: detail,
	})
}
