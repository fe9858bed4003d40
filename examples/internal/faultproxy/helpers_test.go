package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// backend is an httptest receiver that counts the requests it gets and the
// answers it finished writing.
type backend struct {
	srv      *httptest.Server
	got      atomic.Int64  // requests received (body read)
	answered atomic.Int64  // answers written in full
	bodies   chan []byte   // every received body
	finished chan struct{} // one per answer written in full
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{bodies: make(chan []byte, 1024), finished: make(chan struct{}, 1024)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		b.got.Add(1)
		b.bodies <- body
		w.Header().Set("X-Backend", "yes")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(append([]byte("echo:"), body...))
		b.answered.Add(1)
		b.finished <- struct{}{}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) url(t *testing.T) *url.URL {
	t.Helper()
	u, err := url.Parse(b.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// start returns a started proxy in front of b, closed at cleanup.
func start(t *testing.T, b *backend, cfg Config) (*Proxy, string) {
	t.Helper()
	p, err := New(b.url(t), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	u, err := p.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return p, u
}

// freshClient opens a new connection for every request, so that net/http
// never re-sends a request on its own and every fault reaches the caller.
func freshClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

func post(c *http.Client, u, body string) (*http.Response, []byte, error) {
	return postContext(context.Background(), c, u, body)
}

// postContext is post under ctx: canceling ctx is the sender giving up.
func postContext(ctx context.Context, c *http.Client, u, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"/features", bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Idempotency-Key", "k-"+body)
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	return res, got, err
}

// isReset reports whether err is a connection reset, or the end of a
// connection closed before any answer.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
