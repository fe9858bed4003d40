package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// TestProxyStoreBound: -redis-max-memory bounds what all clients together
// make Redis hold: past it, the proxy answers a new key 503 store-full
// with a Retry-After, and forwards nothing.
func TestProxyStoreBound(t *testing.T) {
	own, err := testkit.StartRedis(t.Context(), testkit.RedisOptions{})
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(own.Stop)
	forwarded := 0
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded++
		created(w)
	}))
	t.Cleanup(upstream.Close)
	c, code := parseProxyFlags([]string{"-upstream", upstream.URL, "-store", "redis://" + own.Addr() + "/0", "-redis-volatile",
		"-redis-max-memory", "1", "-pg-max-keys", "5"}, io.Discard)
	if c == nil {
		t.Fatalf("flags: exit %d", code)
	}
	p, err := newProxy(t.Context(), c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	srv := httptest.NewServer(p.handler)
	t.Cleanup(srv.Close)
	resp, body := deliver(t, srv.URL, "new-1", pointFeature)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "store-full") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a new key past -redis-max-memory: %d Retry-After %q %s, want 503 store-full with a Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if forwarded != 0 {
		t.Errorf("forwarded %d requests, want none", forwarded)
	}
}
