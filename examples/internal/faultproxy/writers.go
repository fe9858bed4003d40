package faultproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
)

// discard is the ResponseWriter of a LostAck forward: the target's answer
// is read in full and thrown away.
type discard struct {
	header http.Header
}

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }

var errTooLarge = errors.New("faultproxy: answer larger than MaxBufferBytes")

// recorder holds a DelayResponse answer, up to limit bytes of body.
type recorder struct {
	header http.Header
	status int // 0: not written yet
	body   []byte
	limit  int64
	failed bool // the forward failed: the answer is the proxy's own 502
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 && code >= 200 {
		rec.status = code
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	if int64(len(rec.body))+int64(len(b)) > rec.limit {
		return 0, errTooLarge // ReverseProxy aborts the client's connection
	}
	rec.body = append(rec.body, b...)
	return len(b), nil
}

func (rec *recorder) fail() { rec.failed = true }

// writeTo relays the held answer.
func (rec *recorder) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range rec.header {
		h[k] = v
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body)
}

// relay writes a DelayRequest answer to the client, or, if the client has
// gone by the time the answer starts, drops it and counts it as Dropped.
type relay struct {
	w       http.ResponseWriter
	client  context.Context // the client's request context
	stats   *counters
	failed  bool
	started bool
	gone    bool
}

func (rl *relay) Header() http.Header { return rl.w.Header() }

func (rl *relay) WriteHeader(code int) {
	if rl.started {
		return
	}
	if code < 200 { // 1xx are passed on as they come
		rl.w.WriteHeader(code)
		return
	}
	rl.started = true
	if rl.client.Err() != nil {
		rl.gone = true
		if !rl.failed {
			rl.stats.add(&rl.stats.s.Dropped)
		}
		return
	}
	rl.w.WriteHeader(code)
}

func (rl *relay) Write(b []byte) (int, error) {
	if !rl.started {
		rl.WriteHeader(http.StatusOK)
	}
	if rl.gone {
		return len(b), nil
	}
	return rl.w.Write(b)
}

func (rl *relay) fail() { rl.failed = true }

// Unwrap lets http.ResponseController reach the client's writer (Flush).
func (rl *relay) Unwrap() http.ResponseWriter { return rl.w }

// heldBody is a DelayRequest body: the bytes read before the delay, then
// whatever is left of the client's body.
type heldBody struct {
	io.Reader
	io.Closer
}
