// Package adminhttp is a store's operator surface, [Admin], and serves it
// over HTTP, and calls it: for a store that lives in one process (memstore), so that an operator
// can inspect and free its keys from outside, with the geoidem command:
//
//	geoidem keys get -store http://127.0.0.1:9090 -scope 'POST /features' KEY
//
// Mount [Handler] on a listener of its own, bound to a loopback address,
// never on the public one: it reads recorded answers (bodies included) and
// frees keys. examples/ingest does so with -admin-addr. As a second line of
// defence the handler answers only requests whose Host is a loopback
// address or localhost (against DNS rebinding) and that carry the
// [HeaderName] header (which a browser does not send across origins
// without a preflight the handler never grants).
//
// The routes, each answering JSON:
//
//	GET  /inspect?key=K               the entry
//	POST /free?key=K[&force=true]     free a key in flight (409 when refused)
//	POST /forget?key=K                delete a completed record (409 when refused)
//	GET  /summary                     the store's counts
//
// [Client] calls them and is itself an Admin.
package adminhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HeaderName is the header every request to the handler must carry (with
// any value; the Client sends "1").
const HeaderName = "Geoidem-Admin"

// answer is every route's body: an entry or a summary, or a refusal.
type answer struct {
	Entry   *Entry   `json:"entry,omitempty"`
	Summary *Summary `json:"summary,omitempty"`
	Error   string   `json:"error,omitempty"` // lease-running, not-in-flight, not-completed, or another failure
	Message string   `json:"message,omitempty"`
}

var refusals = map[string]error{
	"lease-running": ErrLeaseRunning,
	"not-in-flight": ErrNotInFlight,
	"not-completed": ErrNotCompleted,
}

// Handler returns the handler that serves a.
func Handler(a Admin) http.Handler {
	mux := http.NewServeMux()
	// byKey serves an operation on the key the query names.
	byKey := func(op func(r *http.Request, key string) (Entry, error)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if key, ok := keyOf(w, r); ok {
				e, err := op(r, key)
				reply(w, e, err)
			}
		}
	}
	mux.Handle("GET /inspect", byKey(func(r *http.Request, key string) (Entry, error) {
		return a.Inspect(r.Context(), key)
	}))
	mux.Handle("POST /free", byKey(func(r *http.Request, key string) (Entry, error) {
		return a.Free(r.Context(), key, r.URL.Query().Get("force") == "true")
	}))
	mux.Handle("POST /forget", byKey(func(r *http.Request, key string) (Entry, error) {
		return a.Forget(r.Context(), key)
	}))
	mux.HandleFunc("GET /summary", func(w http.ResponseWriter, r *http.Request) {
		s, err := a.Summarize(r.Context())
		if err != nil {
			write(w, http.StatusInternalServerError, answer{Error: "failed", Message: err.Error()})
			return
		}
		write(w, http.StatusOK, answer{Summary: &s})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			write(w, http.StatusForbidden, answer{Error: "forbidden", Message: "the admin handler answers only requests to a loopback host"})
			return
		}
		if r.Header.Get(HeaderName) == "" {
			write(w, http.StatusForbidden, answer{Error: "forbidden", Message: "the admin handler answers only requests with the " + HeaderName + " header"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether host (a Host header, with or without a
// port) names a loopback address or localhost.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func keyOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := r.URL.Query().Get("key")
	if key == "" {
		write(w, http.StatusBadRequest, answer{Error: "bad-request", Message: "the key query parameter is required"})
		return "", false
	}
	return key, true
}

func reply(w http.ResponseWriter, e Entry, err error) {
	for code, refusal := range refusals {
		if errors.Is(err, refusal) {
			write(w, http.StatusConflict, answer{Entry: &e, Error: code, Message: err.Error()})
			return
		}
	}
	if err != nil {
		write(w, http.StatusInternalServerError, answer{Error: "failed", Message: err.Error()})
		return
	}
	write(w, http.StatusOK, answer{Entry: &e})
}

func write(w http.ResponseWriter, status int, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(a)
}

// Client calls a Handler at URL (e.g. "http://127.0.0.1:9090"). It is a
// Admin: refusals come back as this package's errors.
type Client struct {
	URL        string
	HTTPClient *http.Client // default http.DefaultClient
}

var _ Admin = (*Client)(nil)

func (c *Client) call(ctx context.Context, method, route string, q url.Values) (answer, error) {
	u := strings.TrimRight(c.URL, "/") + route
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, http.NoBody)
	if err != nil {
		return answer{}, fmt.Errorf("adminhttp: %w", err)
	}
	req.Header.Set(HeaderName, "1")
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("adminhttp: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return answer{}, fmt.Errorf("adminhttp: %s %s: %w", method, route, err)
	}
	var a answer
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&a); err != nil {
		return answer{}, fmt.Errorf("adminhttp: %s %s: answered %d, not an admin answer: %.200q", method, route, resp.StatusCode, b)
	}
	if resp.StatusCode == http.StatusOK {
		return a, nil
	}
	if refusal, ok := refusals[a.Error]; ok && resp.StatusCode == http.StatusConflict {
		return a, refusal
	}
	return answer{}, fmt.Errorf("adminhttp: %s %s: %d %s: %s", method, route, resp.StatusCode, a.Error, a.Message)
}

func (c *Client) entry(ctx context.Context, method, route string, q url.Values) (Entry, error) {
	a, err := c.call(ctx, method, route, q)
	if a.Entry == nil {
		if err == nil {
			err = fmt.Errorf("adminhttp: %s %s: no entry in the answer", method, route)
		}
		return Entry{}, err
	}
	return *a.Entry, err
}

// Inspect implements Admin.
func (c *Client) Inspect(ctx context.Context, key string) (Entry, error) {
	return c.entry(ctx, http.MethodGet, "/inspect", url.Values{"key": {key}})
}

// Free implements Admin.
func (c *Client) Free(ctx context.Context, key string, force bool) (Entry, error) {
	q := url.Values{"key": {key}}
	if force {
		q.Set("force", "true")
	}
	return c.entry(ctx, http.MethodPost, "/free", q)
}

// Forget implements Admin.
func (c *Client) Forget(ctx context.Context, key string) (Entry, error) {
	return c.entry(ctx, http.MethodPost, "/forget", url.Values{"key": {key}})
}

// Summarize implements Admin.
func (c *Client) Summarize(ctx context.Context) (Summary, error) {
	a, err := c.call(ctx, http.MethodGet, "/summary", nil)
	if err != nil {
		return Summary{}, err
	}
	if a.Summary == nil {
		return Summary{}, errors.New("adminhttp: GET /summary: no summary in the answer")
	}
	return *a.Summary, nil
}
