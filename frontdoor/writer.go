package frontdoor

import (
	"fmt"
	"net/http"

	"github.com/geoidem/geoidem/problem"
)

// writer is the response writer the handlers inside a BodyRate answer
// through. Until the body is cut off it passes everything on; after, the
// first thing the handlers write (their answer to the failed read, such as
// the idempotency middleware's 400) becomes the 408, and the rest is
// dropped. Unwrap gives http.ResponseController the writer beneath.
type writer guard

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
	problem.Write(w.w, problem.Details{
		Type:   ProblemSlowBody,
		Title:  "Request body too slow",
		Status: http.StatusRequestTimeout,
		Detail: fmt.Sprintf("The request body fell behind %d bytes a second after the first %v (%d bytes received), so it was cut off before it was read in full. Retry with the same key.",
			g.rate.rate, g.rate.grace, g.got),
	})
}
