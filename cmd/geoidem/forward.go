package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// forwarder is the proxy's handler, behind the middleware: it forwards the
// request whose key the middleware claimed to the upstream, and answers
// what the upstream answered, which the middleware then records (or, for
// a 5xx, 408, 429 or 409 with Retry-After, releases). It tells apart two
// failures the middleware alone cannot:
//
//   - nothing of the request reached the upstream (no connection: refused,
//     unreachable, no address): the upstream did nothing, so the answer is
//     503 upstream-unreachable with Retry-After and the key is released;
//   - the request was sent and no answer can be trusted (the connection
//     reset or closed before the whole answer, the timeout passed, or the
//     upstream's own proxy answered 502 or 504): the upstream may have done
//     the work. The key is held as uncertain (see uncertain).
type forwarder struct {
	base       *url.URL     // the upstream: scheme, host, and a path prefix
	client     *http.Client // its Transport counts what each request wrote (sentConn)
	keyHeader  string       // the header the middleware reads the key from
	timeout    time.Duration
	retryAfter time.Duration
	maxRecord  int // the middleware's MaxRecordBytes: larger answers are streamed
	hold       *uncertain
	metrics    *metrics
	log        *slog.Logger
}

// The proxy's own problem types, under the middleware's base.
const (
	problemUpstreamUnreachable = problem.TypeBase + "upstream-unreachable" // 503, key released
	problemUpstreamUncertain   = problem.TypeBase + "upstream-uncertain"   // 503, key held
)

// hopByHop are the header fields of one connection (RFC 9110, 7.6.1),
// never forwarded either way.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body) // read and bounded by the middleware already
	if err != nil {
		problem.Write(w, problem.Details{Type: middleware.ProblemBodyUnreadable, Title: "Body unreadable", Status: http.StatusBadRequest, Detail: err.Error()})
		return
	}
	ctx := r.Context() // ends when the lease is lost, not when the client leaves
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if c, ok := info.Conn.(*sentConn); ok {
				c.watch(&sent)
			}
		},
	})
	out, err := http.NewRequestWithContext(ctx, r.Method, f.target(r.URL), bytes.NewReader(body))
	if err != nil {
		f.unreachable(w, r, err, 0)
		return
	}
	// No GetBody: the Transport then never sends the request a second
	// time by itself (it does so for a request with an Idempotency-Key on
	// a reused connection that failed), which an upstream that does not
	// deduplicate would run twice.
	out.GetBody = nil
	out.Header = forwardHeader(r, f.keyHeader)
	out.Host = f.base.Host
	start := time.Now()
	resp, err := f.client.Do(out)
	if err != nil {
		if !sent.Load() {
			f.unreachable(w, r, err, time.Since(start))
			return
		}
		f.hold.answer(w, r, fmt.Sprintf("the request was sent and then: %v", cause(ctx, err)), time.Since(start))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout {
		// The upstream's own proxy lost its upstream: it may have run.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		f.hold.answer(w, r, fmt.Sprintf("the upstream's proxy answered %d", resp.StatusCode), time.Since(start))
		return
	}
	// The answer is read in full (up to the most the middleware records)
	// before anything is written, so that an answer cut short is told as
	// uncertain and never recorded.
	buf, err := io.ReadAll(io.LimitReader(resp.Body, int64(f.maxRecord)+1))
	if err != nil {
		f.hold.answer(w, r, fmt.Sprintf("the upstream's answer %d was cut short: %v", resp.StatusCode, cause(ctx, err)), time.Since(start))
		return
	}
	f.metrics.upstreamCall(resultAnswered, time.Since(start))
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
	for _, k := range strings.Split(resp.Header.Get("Connection"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			h.Del(k)
		}
	}
	h.Del("Content-Length")
	h.Del("Idempotent-Replayed") // the middleware says what is a replay
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(buf)
	if len(buf) <= f.maxRecord {
		return
	}
	// Larger than any record: sent in full, recorded by the middleware as
	// too large to replay. An answer cut short now is abandoned: the
	// middleware records that it ran and cannot be replayed.
	if _, err := io.Copy(w, resp.Body); err != nil {
		f.log.LogAttrs(r.Context(), slog.LevelWarn, "upstream answer cut short after its first bytes were sent; recorded as not replayable", heldKey(r), slog.Any("error", err))
		panic(http.ErrAbortHandler)
	}
}

// unreachable answers a request that never reached the upstream: 503 with
// Retry-After, so that the middleware releases the key and the sender's
// retry runs it.
func (f *forwarder) unreachable(w http.ResponseWriter, r *http.Request, err error, d time.Duration) {
	f.metrics.upstreamCall(resultUnreachable, d)
	f.log.LogAttrs(r.Context(), slog.LevelWarn, "upstream unreachable, nothing sent; answered 503 and the key released", heldKey(r), slog.Any("error", err))
	problem.Write(w, problem.Details{Type: problemUpstreamUnreachable, Title: "Upstream unreachable", Status: http.StatusServiceUnavailable,
		Detail: "The receiver behind this proxy could not be reached; nothing was sent to it. Retry with the same key.", RetryAfter: f.retryAfter})
}

// target is the upstream URL of a request for u: the upstream's path
// prefix, then the request's path and query.
func (f *forwarder) target(u *url.URL) string {
	t := *f.base
	t.Path = strings.TrimSuffix(f.base.Path, "/") + u.Path
	if u.RawPath != "" {
		t.RawPath = strings.TrimSuffix(f.base.EscapedPath(), "/") + u.RawPath
	}
	t.RawQuery = u.RawQuery
	return t.String()
}

// forwardHeader is what the upstream receives: the request's fields but
// those of its connection, X-Forwarded-For, -Host and -Proto, and the key
// as an Idempotency-Key (from webhook-id when that is the key), so that
// the upstream can deduplicate its own effects by it.
func forwardHeader(r *http.Request, keyHeader string) http.Header {
	h := r.Header.Clone()
	for _, k := range hopByHop {
		h.Del(k)
	}
	h.Del("Expect") // the body was read in full already: nothing to wait for
	for _, k := range strings.Split(r.Header.Get("Connection"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			h.Del(k)
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := h.Values("X-Forwarded-For"); len(prior) > 0 {
			host = strings.Join(prior, ", ") + ", " + host
		}
		h.Set("X-Forwarded-For", host)
	}
	h.Set("X-Forwarded-Host", r.Host)
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	h.Set("X-Forwarded-Proto", proto)
	if !strings.EqualFold(keyHeader, middleware.DefaultKeyHeader) {
		if key, err := middleware.ParseKey(r.Header.Get(keyHeader)); err == nil {
			h.Set(middleware.DefaultKeyHeader, sfString(key))
		}
	}
	return h
}

// sfString is key as an RFC 9651 string, as the Idempotency-Key draft
// sends it; the middleware's keys are printable ASCII.
func sfString(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}

// cause names why ctx ended when err is its ending: the proxy's timeout, or
// the middleware's (the lease lost, its HandlerTimeout).
func cause(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if c := context.Cause(ctx); c != nil && c != ctx.Err() {
			return fmt.Errorf("%w (%v)", err, c)
		}
	}
	return err
}

// heldKey is the stored key of a request the middleware claimed, for
// logs and for `geoidem keys get -stored-key`.
func heldKey(r *http.Request) slog.Attr {
	if h, ok := middleware.HoldFromContext(r.Context()); ok {
		return slog.String("stored_key", h.Key)
	}
	return slog.String("stored_key", "")
}

// sentConn is a connection to the upstream that knows whether a byte of the
// request using it was written: the line between "nothing sent, released"
// and "sent, uncertain". A byte written to the socket counts as sent,
// whether or not the upstream read it.
type sentConn struct {
	net.Conn
	flag atomic.Pointer[atomic.Bool] // the request using the connection now
}

// watch marks sent once a byte is written from now on.
func (c *sentConn) watch(sent *atomic.Bool) { c.flag.Store(sent) }

func (c *sentConn) Write(p []byte) (int, error) {
	if s := c.flag.Load(); s != nil {
		s.Store(true) // before the write: a write that fails may have sent some
	}
	return c.Conn.Write(p)
}

// upstreamTransport is the Transport to the upstream: connections that
// report what they wrote, kept idle no longer than idle (shorter than the
// upstream's own keep-alive timeout, so that a request is never sent on a
// connection the upstream is closing), and no proxy from the environment.
func upstreamTransport(idle time.Duration, maxConns int) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &sentConn{Conn: c}, nil
		},
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       idle,
		ResponseHeaderTimeout: 0, // the request's timeout bounds it
		ExpectContinueTimeout: 0,
		DisableCompression:    true, // the answer is recorded as the upstream sent it
	}
}
