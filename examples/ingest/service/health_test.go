package service

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type pingerFunc func(ctx context.Context) error

func (f pingerFunc) Ping(ctx context.Context) error { return f(ctx) }

func TestHealthReportsUnreachableStore(t *testing.T) {
	for _, c := range []struct {
		ping   pingerFunc
		status int
		word   string
	}{
		{func(context.Context) error { return nil }, http.StatusOK, `"reachable"`},
		{func(context.Context) error { return errors.New("dial tcp 127.0.0.1:6379: connection refused") }, http.StatusServiceUnavailable, `"unreachable"`},
		{func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, http.StatusServiceUnavailable, `"unreachable"`},
	} {
		w := httptest.NewRecorder()
		health(c.ping).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.word) {
			t.Errorf("health: %d %s, want %d with %s", w.Code, w.Body, c.status, c.word)
		}
	}
}
