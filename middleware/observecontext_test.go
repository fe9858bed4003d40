package middleware_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

type traceKey struct{}

// TestEventCarriesRequestContext: every outcome an Observer sees carries
// the context of the request it settles, so that a tracer can attach the
// outcome to the request's span.
func TestEventCarriesRequestContext(t *testing.T) {
	var got []middleware.Event
	m := newMiddleware(t, new(memstore.Store), middleware.Config{Observer: func(ev middleware.Event) { got = append(got, ev) }})
	h := m.Handler(newCounter())
	reqs := []struct {
		name string
		r    *http.Request
		want middleware.Outcome
	}{
		{"first", post(`"k1"`, feature), middleware.Executed},
		{"retry", post(`"k1"`, feature), middleware.Replayed},
		{"other payload", post(`"k1"`, `{"type":"Point","coordinates":[0,0]}`), middleware.Mismatch},
		{"no key", post("", feature), middleware.Rejected},
	}
	for i, c := range reqs {
		r := c.r.WithContext(context.WithValue(c.r.Context(), traceKey{}, c.name))
		serve(h, r)
		if len(got) != i+1 {
			t.Fatalf("%s: %d events, want %d", c.name, len(got), i+1)
		}
		ev := got[i]
		if ev.Outcome != c.want {
			t.Errorf("%s: outcome %v, want %v", c.name, ev.Outcome, c.want)
		}
		if ev.Context == nil {
			t.Fatalf("%s: Event.Context is nil", c.name)
		}
		if v, _ := ev.Context.Value(traceKey{}).(string); v != c.name {
			t.Errorf("%s: Event.Context carries %q, want the request's %q", c.name, v, c.name)
		}
	}
}
