package middleware_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestReplayHeadersAllowListed checks that a replay carries exactly the
// allow-listed fields of its record, whatever else the handler set, and
// Cache-Control only when it is allow-listed or the middleware's own
// no-store.
func TestReplayHeadersAllowListed(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Location", "/f/1")
		h.Set("Cache-Control", "private")
		h.Set("X-Secret", "s")
		h.Add("Link", "<a>")
		h.Add("Link", "<b>")
		w.WriteHeader(http.StatusCreated)
	})
	for _, c := range []struct {
		name   string
		replay []string
		want   http.Header
	}{
		{"default", nil, http.Header{"Content-Type": {"application/json"}, "Location": {"/f/1"}, "Link": {"<a>", "<b>"}}},
		{"with Cache-Control", []string{"Cache-Control", "Location"}, http.Header{"Cache-Control": {"private"}, "Location": {"/f/1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newMiddleware(t, memstore.New(memstore.Config{}), middleware.Config{ReplayHeaders: c.replay}).Handler(handler)
			serve(h, post("k", `{}`))
			w := serve(h, post("k", `{}`))
			if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: status %d, Idempotent-Replayed %q", w.Code, w.Header().Get("Idempotent-Replayed"))
			}
			got := w.Header().Clone()
			delete(got, "Idempotent-Replayed")
			delete(got, "Content-Length")
			if len(got) != len(c.want) {
				t.Errorf("replayed fields %v, want %v", got, c.want)
			}
			for k, vs := range c.want {
				if !slices.Equal(got[k], vs) {
					t.Errorf("%s: replayed %q, want %q", k, got[k], vs)
				}
			}
		})
	}
}
