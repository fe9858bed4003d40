package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/internal/senderclock"
)

// epoch is the fake clock's start: a fixed wall time without a monotonic
// reading, so tests print and compare exact times.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// withClock returns cfg, a client.Config or a client.FileJournalConfig,
// with the clock c.
func withClock[C client.Config | client.FileJournalConfig](c senderclock.Clock, cfg C) C {
	senderclock.Set(&cfg, c)
	return cfg
}

// fakeClock is a senderclock.Clock whose Sleep returns at once, advancing the
// time by the requested duration and recording it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(max(d, 0))
	return nil
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// blockingClock is a senderclock.Clock whose Sleep blocks until its context is
// done, announcing each wait on sleeping first.
type blockingClock struct {
	sleeping chan time.Duration
}

func (c *blockingClock) Now() time.Time { return epoch }

func (c *blockingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeping <- d
	<-ctx.Done()
	return ctx.Err()
}

// step is one scripted answer of a scriptTransport: a response, or err.
type step struct {
	status int
	header map[string]string
	body   string
	err    error
	took   time.Duration // advances the transport's clock, if any
}

// seen is one request a scriptTransport received.
type seen struct {
	method string
	url    string
	header http.Header
	body   []byte
	ctx    context.Context
}

// scriptTransport answers the i-th request with steps[i], repeating the
// last step when it runs out, and records every request.
type scriptTransport struct {
	clock *fakeClock // may be nil
	steps []step

	mu   sync.Mutex
	reqs []seen
}

func (t *scriptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	t.mu.Lock()
	i := len(t.reqs)
	t.reqs = append(t.reqs, seen{req.Method, req.URL.String(), req.Header.Clone(), body, req.Context()})
	t.mu.Unlock()
	s := t.steps[min(i, len(t.steps)-1)]
	if t.clock != nil {
		t.clock.Advance(s.took)
	}
	if s.err != nil {
		return nil, s.err
	}
	h := make(http.Header)
	for k, v := range s.header {
		h.Set(k, v)
	}
	return &http.Response{
		StatusCode: s.status,
		Status:     fmt.Sprintf("%d %s", s.status, http.StatusText(s.status)),
		Header:     h,
		Body:       io.NopCloser(strings.NewReader(s.body)),
		Request:    req,
	}, nil
}

func (t *scriptTransport) Requests() []seen {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]seen(nil), t.reqs...)
}

// memSink is a DeadLetterSink that keeps dead letters in memory.
type memSink struct {
	mu   sync.Mutex
	dls  []client.DeadLetter
	fail error
}

func (s *memSink) Put(ctx context.Context, dl client.DeadLetter) error {
	if ctx.Err() != nil {
		return errors.New("memSink: Put got a done context")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dl.Body = append([]byte(nil), dl.Body...)
	s.dls = append(s.dls, dl)
	return s.fail
}

func (s *memSink) All() []client.DeadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]client.DeadLetter(nil), s.dls...)
}

// newSender returns a sender over tr with a fake clock and a seeded random
// source; cfg's Clock and Rand, if set, win.
func newSender(t *testing.T, tr http.RoundTripper, cfg client.Config) *client.Sender {
	t.Helper()
	if cfg.Rand == nil {
		cfg.Rand = newSource(1)
	}
	s, err := client.New(&http.Client{Transport: tr}, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// delivery is a valid delivery used by most tests.
func delivery() client.Delivery {
	return client.Delivery{
		URL:  "http://receiver.test/features",
		Key:  "key-1",
		Body: []byte(`{"type":"Feature","geometry":null,"properties":{}}`),
	}
}

func newSource(seed uint64) *rand.PCG { return rand.NewPCG(seed, seed^0x9e3779b97f4a7c15) }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
