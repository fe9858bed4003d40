package middleware_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// A flood of refusals (here a full store) writes a bounded number of log
// lines, not one per request.
func TestRefusalLogIsBounded(t *testing.T) {
	var buf bytes.Buffer
	store := memstore.New(memstore.Config{MaxEntries: 1})
	m := newMiddleware(t, store, middleware.Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	h := m.Handler(newCounter())
	const n = 2000
	for i := range n {
		w := serve(h, post("k"+strconv.Itoa(i), feature))
		if i > 0 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("request %d: status %d, want 503 (store full)", i, w.Code)
		}
	}
	if lines := strings.Count(buf.String(), "\n"); lines > 20 {
		t.Errorf("%d refusals wrote %d log lines (%d bytes), want at most 20", n-1, lines, buf.Len())
	}
}
