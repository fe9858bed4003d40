package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A balancer is the load balancer in front of the receiver's replicas, as
// a team runs one: each request goes to one replica, chosen in turn
// (roundrobin) or at random (random, seeded). A replica that refuses the
// connection (it is restarting) is skipped for the next, as a load
// balancer's passive health check would; the request was not sent, so
// nothing ran. Once a request has been sent, a failure (a replica killed
// while it works) is the sender's to retry: the balancer answers 502 and
// does not send it again, since it cannot know whether the handler ran.
// (One exception is net/http's: its Transport sends a request that carries
// an Idempotency-Key again, once, on a fresh connection when the kept-alive
// one it used turns out closed by the replica before any answer, as a
// replica that drains does with its idle connections. That is a retry of
// the same key, which the middleware answers like any other.)
type balancer struct {
	backends []string // host:port of each replica
	policy   string   // "roundrobin" or "random"
	tr       *http.Transport
	srv      *http.Server
	url      string

	mu   sync.Mutex // guards rng
	rng  *rand.Rand
	next atomic.Uint64

	// Counts, for the table.
	requests, skipped, failed atomic.Int64
	perBackend                []atomic.Int64
}

// Balancing policies (-balance).
const (
	balanceRoundRobin = "roundrobin"
	balanceRandom     = "random"
)

// maxBalancedBody bounds the body the balancer buffers (it may send a
// request to a second replica, so it reads it first).
const maxBalancedBody = 4 << 20

// newBalancer serves a balancer over backends on a fresh loopback port.
func newBalancer(backends []string, policy string, seed uint64) (*balancer, error) {
	if policy != balanceRoundRobin && policy != balanceRandom {
		return nil, fmt.Errorf("-balance %q: want %s or %s", policy, balanceRoundRobin, balanceRandom)
	}
	b := &balancer{
		backends:   backends,
		policy:     policy,
		rng:        rand.New(rand.NewPCG(seed, 0xba1a)),
		perBackend: make([]atomic.Int64, len(backends)),
		tr: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	srv, u, err := server("127.0.0.1:0", b)
	if err != nil {
		return nil, err
	}
	b.srv, b.url = srv, u
	return b, nil
}

// URL is the balancer's base URL.
func (b *balancer) URL() string { return b.url }

// pick returns the index of the replica the next request goes to first.
func (b *balancer) pick() int {
	if b.policy == balanceRandom {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.rng.IntN(len(b.backends))
	}
	return int(b.next.Add(1)-1) % len(b.backends)
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.requests.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBalancedBody+1))
	if err != nil || len(body) > maxBalancedBody {
		http.Error(w, "request body unreadable or too large for the balancer", http.StatusBadGateway)
		return
	}
	first := b.pick()
	for i := range b.backends {
		n := (first + i) % len(b.backends)
		resp, err := b.send(r, n, body)
		if err == nil {
			b.perBackend[n].Add(1)
			relay(w, resp)
			return
		}
		if !refused(err) || r.Context().Err() != nil {
			break
		}
		b.skipped.Add(1) // not sent: the next replica may take it
	}
	b.failed.Add(1)
	http.Error(w, "no replica answered", http.StatusBadGateway)
}

// send sends r, with body, to replica n.
func (b *balancer) send(r *http.Request, n int, body []byte) (*http.Response, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+b.backends[n]+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	return b.tr.RoundTrip(out)
}

// refused reports an error of a request never sent: the replica refused
// the connection (it is down or restarting).
func refused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial"
}

// relay copies resp to w.
func relay(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// Close stops the balancer.
func (b *balancer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.srv.Shutdown(ctx)
	b.tr.CloseIdleConnections()
}

// spread returns how many requests each replica answered.
func (b *balancer) spread() []int64 {
	out := make([]int64, len(b.perBackend))
	for i := range b.perBackend {
		out[i] = b.perBackend[i].Load()
	}
	return out
}
