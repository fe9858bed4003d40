package frontdoor

import (
	"net/http"
	"strconv"
	"time"
)

// answer is the response writer the work route answers through under a
// Door: it keeps the answer, up to MaxAnswerBytes, while the handler runs,
// so that the work slot is given back before the answer goes out
// (deliver). An answer that outgrows it, or that the handler flushes, is
// written through from then on, the slot still held.
type answer struct {
	w       http.ResponseWriter
	code    int
	buf     []byte
	max     int
	through bool
}

func (a *answer) Header() http.Header { return a.w.Header() }

func (a *answer) WriteHeader(code int) {
	switch {
	case a.through:
		a.w.WriteHeader(code)
	case code < 200: // informational: out at once
		a.w.WriteHeader(code)
	case a.code == 0:
		a.code = code
	}
}

func (a *answer) Write(p []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	if !a.through && len(a.buf)+len(p) > a.max {
		a.passThrough()
	}
	if a.through {
		return a.w.Write(p)
	}
	a.buf = append(a.buf, p...)
	return len(p), nil
}

// FlushError writes what is kept and passes everything through from now
// on; it is what http.ResponseController.Flush calls.
func (a *answer) FlushError() error {
	a.passThrough()
	return http.NewResponseController(a.w).Flush()
}

// Flush is FlushError for the handlers that look for an http.Flusher.
func (a *answer) Flush() { _ = a.FlushError() }

// Unwrap gives http.ResponseController the writer beneath.
func (a *answer) Unwrap() http.ResponseWriter { return a.w }

// passThrough writes what is kept and turns the answer into a pass-through.
func (a *answer) passThrough() {
	if a.through {
		return
	}
	a.through = true
	if a.code != 0 {
		a.w.WriteHeader(a.code)
	}
	if len(a.buf) > 0 {
		_, _ = a.w.Write(a.buf)
	}
	a.buf = nil
}

// deliver writes the answer kept in a, after the work slot was given
// back: its client must take it at MinWriteRate after the body's grace,
// or its connection is closed.
func (d *Door) deliver(a *answer) {
	if a.through || a.code == 0 {
		return // out already, or nothing written: the server answers 200
	}
	d.mu.Lock()
	d.stats.Answering++
	d.mu.Unlock()
	allow := d.writeGrace
	if d.minWrite > 0 {
		allow += time.Duration(float64(len(a.buf)) / float64(d.minWrite) * float64(time.Second))
	}
	rc := http.NewResponseController(a.w)
	_ = rc.SetWriteDeadline(time.Now().Add(allow))
	h := a.w.Header()
	if h.Get("Content-Length") == "" && a.code != http.StatusNoContent && a.code != http.StatusNotModified {
		h.Set("Content-Length", strconv.Itoa(len(a.buf)))
	}
	a.w.WriteHeader(a.code)
	_, err := a.w.Write(a.buf)
	if err == nil {
		err = rc.Flush()
	}
	d.mu.Lock()
	d.stats.Answering--
	if err != nil {
		d.stats.AnswersCut++
	}
	d.mu.Unlock()
}
