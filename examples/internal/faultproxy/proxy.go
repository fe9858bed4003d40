package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// HeaderFault is set on the answers the proxy makes up itself (injected 503
// and 429), with the fault's name, so that they can be told apart from the
// target's own 503 and 429.
const HeaderFault = "Faultproxy-Fault"

// ErrClosed is returned by [Proxy.Start] after [Proxy.Close].
var ErrClosed = errors.New("faultproxy: proxy closed")

// Proxy is a fault-injecting reverse proxy in front of one target. It is
// safe for concurrent use. Create it with [New], serve it with
// [Proxy.Start] or [Proxy.Handler], and stop it with [Proxy.Close].
type Proxy struct {
	target    *url.URL
	rp        *httputil.ReverseProxy
	transport *http.Transport
	trace     *httptrace.ClientTrace

	settings atomic.Pointer[settings]
	seq      atomic.Uint64 // number of the last request read
	paused   atomic.Bool
	down     atomic.Bool
	stats    counters

	// ctx is canceled by Close; every wait and forward ends with it.
	ctx    context.Context
	cancel context.CancelFunc

	closeOnce sync.Once
	mu        sync.Mutex
	closed    bool           // no new requests
	inflight  sync.WaitGroup // ServeHTTP calls
	srv       *http.Server
	served    chan struct{} // closed when srv.Serve has returned
	url       string
}

// New returns a Proxy that forwards to target, which must be an http URL
// whose host is a loopback address or "localhost". The target's path, if
// any, is prefixed to every request's path. New fails, with an error
// wrapping [ErrInvalidConfig], for an unusable cfg or target.
func New(target *url.URL, cfg Config) (*Proxy, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	s, err := newSettings(cfg)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target}
	p.settings.Store(s)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.transport = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true, // relay bodies byte for byte
	}
	p.trace = &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				p.stats.add(&p.stats.s.Forwarded)
			}
		},
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:      func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:    p.transport,
		ErrorLog:     log.New(io.Discard, "", 0),
		ErrorHandler: p.forwardError,
	}
	return p, nil
}

func checkTarget(target *url.URL) error {
	if target == nil {
		return fmt.Errorf("%w: nil target", ErrInvalidConfig)
	}
	if target.Scheme != "http" {
		return fmt.Errorf("%w: target %q: scheme must be http", ErrInvalidConfig, target.Redacted())
	}
	host := target.Hostname()
	if host == "localhost" {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: target %q is not on loopback", ErrInvalidConfig, target.Redacted())
}

// Start serves the proxy on a new listener at 127.0.0.1 on a free port and
// returns its base URL, e.g. "http://127.0.0.1:41234". Calling Start again
// returns the same URL. It fails with [ErrClosed] after Close.
func (p *Proxy) Start() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", ErrClosed
	}
	if p.srv != nil {
		return p.url, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("faultproxy: listen: %w", err)
	}
	p.srv = &http.Server{
		Handler:           p.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	p.served = make(chan struct{})
	go func(srv *http.Server, done chan<- struct{}) {
		defer close(done)
		_ = srv.Serve(ln) // ends with ErrServerClosed on Close
	}(p.srv, p.served)
	p.url = "http://" + ln.Addr().String()
	return p.url, nil
}

// URL returns the base URL from [Proxy.Start], or "" before it.
func (p *Proxy) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

// Handler returns the proxy as an http.Handler, for serving it on a
// server of one's own instead of [Proxy.Start]. LostAck, Reset and Down
// hijack the connection, so the server's ResponseWriter should support
// http.Hijacker (an HTTP/1 server's does); where it does not, the handler
// panics with http.ErrAbortHandler, which net/http's server turns into an
// aborted connection or stream.
func (p *Proxy) Handler() http.Handler {
	return http.HandlerFunc(p.serve)
}

// Close stops the proxy at once: it closes the listener and connections of
// [Proxy.Start], ends every pending delay and forward (a delayed request
// not forwarded yet is then never forwarded), waits for every request in
// progress to finish, and closes the idle connections to the target. Later
// requests through [Proxy.Handler] get their connection reset. Close is
// idempotent and always returns nil.
func (p *Proxy) Close() error {
	p.stopAccepting()
	p.closeOnce.Do(func() {
		p.cancel()
		p.mu.Lock()
		srv, served := p.srv, p.served
		p.mu.Unlock()
		if srv != nil {
			_ = srv.Close()
			<-served
		}
		p.inflight.Wait()
		p.transport.CloseIdleConnections()
	})
	return nil
}

// Shutdown stops the proxy gracefully: from now on it resets the connection
// of every new request, and it waits for the requests in progress to finish
// as they would have (delays run out, held requests are forwarded, answers
// relayed or dropped) before it closes the proxy as [Proxy.Close] does. If
// ctx ends first, Shutdown closes the proxy at once and returns ctx's
// error. Use it at the end of a run, so that every delayed request has
// reached the target before the target is checked.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.stopAccepting()
	idle := make(chan struct{})
	go func() {
		p.inflight.Wait()
		close(idle)
	}()
	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = p.Close()
	<-idle
	return err
}

// stopAccepting makes every later request a reset.
func (p *Proxy) stopAccepting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
}

// SetConfig replaces the fault configuration for the requests read from now
// on; requests already in progress finish under the old one. Request
// numbering goes on where it was. It fails, leaving the configuration as it
// was, with an error wrapping [ErrInvalidConfig].
func (p *Proxy) SetConfig(cfg Config) error {
	s, err := newSettings(cfg)
	if err != nil {
		return err
	}
	p.settings.Store(s)
	return nil
}

// Config returns the current configuration, with defaults filled in.
func (p *Proxy) Config() Config {
	cfg := p.settings.Load().Config
	cfg.Schedule = maps.Clone(cfg.Schedule)
	return cfg
}

// Pause stops injecting faults: from now on every request is forwarded
// clean (counted as [None]) until [Proxy.Resume]. Request numbers still
// advance, so the draws after Resume are those the requests would have had
// anyway. Pause does not end [Proxy.SetDown].
func (p *Proxy) Pause() { p.paused.Store(true) }

// Resume undoes [Proxy.Pause].
func (p *Proxy) Resume() { p.paused.Store(false) }

// SetDown puts the proxy down (true) or back up (false). While it is down
// it resets the connection of every request without forwarding it
// (counted as [Down]), as if the target were unreachable; down takes
// precedence over Pause and the Config.
func (p *Proxy) SetDown(down bool) { p.down.Store(down) }

// Stats returns a consistent snapshot of the counters.
func (p *Proxy) Stats() Stats { return p.stats.snapshot() }

// enter registers a request, or reports false once the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		reset(w)
		return
	}
	defer p.inflight.Done()

	n := p.seq.Add(1)
	s := p.settings.Load()
	d := decision{fault: None}
	switch {
	case p.down.Load():
		d.fault = Down
	case p.paused.Load():
	default:
		d = s.decide(n)
	}
	p.stats.decided(d.fault)
	if s.OnDecision != nil {
		s.OnDecision(n, r, d.fault)
	}
	if d.fault != None {
		s.Logger.Debug("faultproxy: injecting", "n", n, "fault", d.fault.String(), "method", r.Method, "path", r.URL.Path)
	}

	switch d.fault {
	case None:
		ctx, done := p.bound(r.Context())
		defer done()
		p.forward(w, r, ctx)
	case LostAck:
		p.lostAck(w, r)
	case Inject503:
		inject(w, http.StatusServiceUnavailable, d.fault, s.retryAfter(d.dateForm))
	case Inject429:
		inject(w, http.StatusTooManyRequests, d.fault, s.retryAfter(d.dateForm))
	case Reset, Down:
		reset(w)
	case Delay:
		if s.DelayMode == DelayResponse {
			p.delayResponse(w, r, s)
		} else {
			p.delayRequest(w, r, s)
		}
	}
}

// bound returns parent, also canceled by Close.
func (p *Proxy) bound(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(p.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// forward sends r to the target under ctx and writes the answer to w.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, ctx context.Context) {
	p.rp.ServeHTTP(w, r.WithContext(httptrace.WithClientTrace(ctx, p.trace)))
}

func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	p.stats.add(&p.stats.s.ForwardErrors)
	p.settings.Load().Logger.Warn("faultproxy: forward failed", "method", r.Method, "path", r.URL.Path, "err", err)
	if f, ok := w.(interface{ fail() }); ok {
		f.fail()
	}
	w.WriteHeader(http.StatusBadGateway)
}

// lostAck forwards r, reads the whole answer into nowhere, and resets the
// client's connection.
func (p *Proxy) lostAck(w http.ResponseWriter, r *http.Request) {
	ctx, done := p.bound(r.Context())
	defer done()
	p.forward(&discard{header: http.Header{}}, r, ctx)
	reset(w)
}

// delayRequest holds r for DelayFor, then forwards it whether or not the
// client is still there, and relays the answer if it is.
func (p *Proxy) delayRequest(w http.ResponseWriter, r *http.Request, s *settings) {
	var held []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		held, err = io.ReadAll(io.LimitReader(r.Body, s.MaxBufferBytes))
		if err != nil {
			reset(w) // the client broke off its own request: nothing to forward
			return
		}
	}
	if !p.wait(s, nil) {
		reset(w)
		return
	}
	ctx, done := p.bound(context.WithoutCancel(r.Context()))
	defer done()
	out := r.WithContext(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		out.Body = heldBody{Reader: io.MultiReader(bytes.NewReader(held), r.Body), Closer: r.Body}
	}
	p.forward(&relay{w: w, client: r.Context(), stats: &p.stats}, out, ctx)
}

// delayResponse forwards r at once, holds the whole answer for DelayFor,
// and relays it if the client is still there.
func (p *Proxy) delayResponse(w http.ResponseWriter, r *http.Request, s *settings) {
	ctx, done := p.bound(r.Context())
	defer done()
	rec := &recorder{header: http.Header{}, limit: s.MaxBufferBytes}
	p.forward(rec, r, ctx)
	if !p.wait(s, r.Context().Done()) {
		reset(w)
		return
	}
	if r.Context().Err() != nil {
		if !rec.failed {
			p.stats.add(&p.stats.s.Dropped)
		}
		return
	}
	rec.writeTo(w)
}

// wait waits for s.DelayFor (or s.After), or until gone is closed
// (reported true) or the proxy closes (reported false).
func (p *Proxy) wait(s *settings, gone <-chan struct{}) bool {
	var elapsed <-chan time.Time
	if s.After != nil {
		elapsed = s.After(s.DelayFor)
	} else {
		t := time.NewTimer(s.DelayFor)
		defer t.Stop()
		elapsed = t.C
	}
	select {
	case <-elapsed:
		return true
	case <-gone:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// inject answers with code and Retry-After, without forwarding.
func inject(w http.ResponseWriter, code int, f Fault, retryAfter string) {
	h := w.Header()
	h.Set("Retry-After", retryAfter)
	h.Set(HeaderFault, f.String())
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, "faultproxy: injected "+http.StatusText(code)+"\n")
}

// reset hijacks the client's connection and closes it with SO_LINGER 0, so
// that the client gets a TCP RST and no answer.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if l, ok := conn.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	_ = conn.Close()
}
