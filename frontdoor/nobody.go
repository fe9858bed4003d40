package frontdoor

import (
	"io"
	"net/http"
	"sync/atomic"
)

// answerWithoutBody wraps h so that an answer that does not need the
// request's body (a refusal, GET /healthz with a body) is not held waiting
// for a body that is not coming: when the answer's header goes out before
// the body was read to its end, the connection is closed after the answer
// (Connection: close) instead of reading the rest of the body first, which
// net/http does, up to 256 KiB, to keep the connection, and which a body
// that never arrives holds until the server's ReadTimeout. Door.Server
// wraps its handler so.
func answerWithoutBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		b := &seenBody{ReadCloser: r.Body, left: r.ContentLength}
		// A copy of the request carries the wrapped body: net/http reads
		// its own request's Body after the handler to tell whether the body
		// was left unread, and then shuts the connection's sending side
		// before closing it, so that the client reads the answer to its end
		// rather than a reset.
		r = r.WithContext(r.Context())
		r.Body = b
		cw := &closeUnread{ResponseWriter: w, body: b}
		h.ServeHTTP(cw, r)
		if !cw.wrote {
			cw.WriteHeader(http.StatusOK) // what the server writes for a handler that wrote nothing
		}
	})
}

// seenBody is a request body that tells whether it was read to its end.
type seenBody struct {
	io.ReadCloser
	left int64 // bytes declared and not yet read; negative: unknown
	done atomic.Bool
}

func (b *seenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if err != nil || b.left == 0 {
		b.done.Store(true)
	}
	return n, err
}

// closeUnread marks the answer Connection: close when its header goes out
// before the body was read to its end.
type closeUnread struct {
	http.ResponseWriter
	body  *seenBody
	wrote bool
}

func (w *closeUnread) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		if !w.body.done.Load() {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeUnread) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes through the writer beneath; it is what
// http.ResponseController.Flush calls.
func (w *closeUnread) FlushError() error {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for the handlers that look for an http.Flusher.
func (w *closeUnread) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the writer beneath (Hijack too).
func (w *closeUnread) Unwrap() http.ResponseWriter { return w.ResponseWriter }
