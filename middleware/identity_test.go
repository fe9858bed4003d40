package middleware_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// runsPerHandler is an ingest handler per name that counts its runs.
type runsPerHandler map[string]*counter

func (h runsPerHandler) handler(name string) http.Handler {
	c := newCounter()
	h[name] = c
	return c
}

// A method-less ServeMux pattern routes POST and post to one handler, and
// the middleware covers post as POST (Config.Methods matches without case):
// the two are one request, so the second is a replay, never a second run.
func TestMethodCaseIsOneIdentity(t *testing.T) {
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	runs := runsPerHandler{}
	mux := http.NewServeMux()
	mux.Handle("/features", m.Handler(runs.handler("features")))
	for _, method := range []string{"POST", "post", "Post"} {
		r := post("evt-case", feature)
		r.Method = method
		w := serve(mux, r)
		if w.Code != http.StatusCreated {
			t.Fatalf("%s: status %d, want 201 (%s)", method, w.Code, w.Body)
		}
		if method != "POST" && w.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s after POST with the same key and body: not a replay", method)
		}
	}
	if n := runs["features"].total.Load(); n != 1 {
		t.Errorf("the handler ran %d times for one key and body sent as POST, post and Post; want 1", n)
	}
}

// ServeMux host patterns are two handlers: one Middleware wrapping both
// must keep their keys apart by default, as it keeps paths apart, so that
// each host's handler runs and neither is answered the other's response.
func TestHostPatternsAreTwoScopes(t *testing.T) {
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	runs := runsPerHandler{}
	mux := http.NewServeMux()
	mux.Handle("a.example/orders", m.Handler(runs.handler("a")))
	mux.Handle("POST b.example/orders", m.Handler(runs.handler("b")))
	mux.Handle("/orders", m.Handler(runs.handler("any")))
	for _, host := range []string{"a.example", "b.example", "c.example", "d.example"} {
		r := post("evt-host", feature)
		r.URL.Path, r.Host = "/orders", host
		w := serve(mux, r)
		if w.Code != http.StatusCreated {
			t.Fatalf("%s: status %d, want 201 (%s)", host, w.Code, w.Body)
		}
	}
	for name, want := range map[string]int64{"a": 1, "b": 1, "any": 1} {
		if n := runs[name].total.Load(); n != want {
			t.Errorf("handler %s ran %d times, want %d (a.example and b.example are two routes; c.example and d.example one, the host-less pattern's)", name, n, want)
		}
	}
}

// DefaultScope is the scope of the default identity, for custom scopes to
// build on: the method in upper case, the pattern's host, the normalised
// path.
func TestDefaultScope(t *testing.T) {
	mux := http.NewServeMux()
	var got []string
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, middleware.DefaultScope(r)) })
	mux.Handle("a.example/orders/{id}", record)
	mux.Handle("/features", record)
	for _, c := range []struct{ method, host, path string }{
		{"post", "a.example", "/orders/%31"},
		{"PATCH", "z.example", "/%66eatures"},
	} {
		r := post("k", "")
		r.Method, r.Host, r.URL.Path, r.URL.RawPath = c.method, c.host, strings.ReplaceAll(strings.ReplaceAll(c.path, "%31", "1"), "%66", "f"), c.path
		serve(mux, r)
	}
	want := []string{"POST a.example/orders/1", "PATCH /features"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("DefaultScope = %q, want %q", got, want)
	}
}

// A handler's 409 with Retry-After says "come back then", as the
// middleware's own in-flight answer does: it is released, not recorded, so
// that the sender's retry (package client retries exactly that) runs the
// handler again. A 409 without Retry-After is an outcome, recorded.
func TestConflictWithRetryAfterIsReleased(t *testing.T) {
	for _, ra := range []bool{true, false} {
		m := newMiddleware(t, new(memstore.Store), middleware.Config{})
		runs := 0
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs++
			if ra {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(http.StatusConflict)
		}))
		serve(h, post("k", feature))
		second := serve(h, post("k", feature))
		if want := map[bool]int{true: 2, false: 1}[ra]; runs != want {
			t.Errorf("409 with Retry-After %v: the handler ran %d times for two deliveries, want %d", ra, runs, want)
		}
		if replayed := second.Header().Get("Idempotent-Replayed") == "true"; replayed == ra {
			t.Errorf("409 with Retry-After %v: second delivery replayed %v", ra, replayed)
		}
	}
}
