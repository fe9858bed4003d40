package service

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/internal/hijack"
	"github.com/geoidem/geoidem/internal/ratelog"
)

// refusalMessage is the message of the record logged for each refusal.
const refusalMessage = "request refused"

// refusalStatuses are the answers logged as refusals: what a sender's
// request was refused for (its body, its type, its size, its rate) or what
// the service could not take then (503).
var refusalStatuses = map[int]bool{
	http.StatusBadRequest:            true,
	http.StatusRequestEntityTooLarge: true,
	http.StatusUnsupportedMediaType:  true,
	http.StatusUnprocessableEntity:   true,
	http.StatusTooManyRequests:       true,
	http.StatusServiceUnavailable:    true,
}

// problemPrefix is how much of a refusal's problem document is kept to
// read its type, which problem.Write puts first.
const problemPrefix = 1 << 10

// maxLoggedKey bounds the Idempotency-Key a record carries: the header is
// the sender's, and a refusal may be for a key too long.
const maxLoggedKey = 300

// logRefusals serves next and logs each of its refusals (refusalStatuses)
// but those the front door logs itself (loggedByDoor), at most ratelog's
// bound a minute, without -v: the method, the path, the client's address
// and identity, the key (in keyHeader) and the problem type, so an
// operator can tell a sender why its events bounce. client names the
// request's client, as the key store counts it (nil: none).
func logRefusals(next http.Handler, log *slog.Logger, keyHeader string, client func(*http.Request) string) http.Handler {
	refusals := ratelog.New(log, 0, 0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &refusalWriter{w: w}
		var out http.ResponseWriter = rw
		if hijack.Possible(w) {
			out = &refusalHijacker{rw}
		}
		next.ServeHTTP(out, r)
		if !refusalStatuses[rw.status] {
			return
		}
		uri := problemURI(rw.problem.Bytes())
		if loggedByDoor[uri] {
			return
		}
		key := r.Header.Get(keyHeader)
		if len(key) > maxLoggedKey {
			key = key[:maxLoggedKey] + "…"
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("addr", r.RemoteAddr),
			slog.String("key", key),
			slog.Int("status", rw.status),
			slog.String("problem", problemName(uri)),
		}
		if client != nil {
			attrs = append(attrs, slog.String("client", client(r)))
		}
		refusals.Warn(r.Context(), refusalMessage, attrs...)
	})
}

// loggedByDoor are the refusals the front door logs itself, with the
// client: logged here too, each would be logged twice.
var loggedByDoor = map[string]bool{
	frontdoor.ProblemServerBusy: true,
	frontdoor.ProblemClientBusy: true,
}

// problemName returns the name of a problem type: the type URI's fragment
// (invalid-geojson of …/docs/problems.md#invalid-geojson), or the URI
// itself without one.
func problemName(uri string) string {
	if _, frag, ok := strings.Cut(uri, "#"); ok && frag != "" {
		return frag
	}
	return uri
}

// problemURI returns the type URI of a problem document's beginning; ""
// when doc names none.
func problemURI(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return ""
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		if name != "type" {
			continue
		}
		var uri string
		if json.Unmarshal(v, &uri) != nil {
			return ""
		}
		return uri
	}
	return ""
}

// refusalWriter passes an answer on, noting its status and, for a refusal
// answered with a problem document, the document's beginning. Unwrap gives
// http.ResponseController the writer beneath, so flushes and deadlines
// reach it.
type refusalWriter struct {
	w       http.ResponseWriter
	status  int
	problem bytes.Buffer // a refusal's problem document, its first problemPrefix bytes
	keep    bool         // this answer's body goes into problem
}

// refusalHijacker is a refusalWriter that is an http.Hijacker too, for a
// request whose writer beneath can be hijacked, so that type assertions
// see what the server offers.
type refusalHijacker struct{ *refusalWriter }

// Hijack takes the connection over.
func (h *refusalHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.w).Hijack()
}

func (w *refusalWriter) Header() http.Header { return w.w.Header() }

func (w *refusalWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
		if refusalStatuses[code] {
			mt, _, _ := mime.ParseMediaType(w.w.Header().Get("Content-Type"))
			w.keep = mt == "application/problem+json"
		}
	}
	w.w.WriteHeader(code)
}

func (w *refusalWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.keep && w.problem.Len() < problemPrefix {
		w.problem.Write(p[:min(len(p), problemPrefix-w.problem.Len())])
	}
	return w.w.Write(p)
}

// FlushError flushes the writer beneath; it is what
// http.ResponseController.Flush calls.
func (w *refusalWriter) FlushError() error { return http.NewResponseController(w.w).Flush() }

// Flush flushes the writer beneath, for handlers that assert http.Flusher.
func (w *refusalWriter) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the writer beneath.
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.w }
