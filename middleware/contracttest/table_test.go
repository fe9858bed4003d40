package contracttest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/internal/answer"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// refusingClaims is a memstore whose next Claim fails with err, once.
type refusingClaims struct {
	*memstore.Store
	mu  sync.Mutex
	err error
}

func (s *refusingClaims) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	s.mu.Lock()
	err := s.err
	s.err = nil
	s.mu.Unlock()
	if err != nil {
		return keystore.Claim{}, err
	}
	return s.Store.Claim(ctx, key, a)
}

// TestMiddlewareAnswersAreTheTable gives each answer the middleware writes
// itself, live, and checks it against its row of answer.Table: its status,
// whether it carries Retry-After, whether the paired sender retries it,
// and what it left of the key, seen from the next request with the same
// key and bytes: run (not claimed, released), validated again (released,
// same bytes same answer) or replayed (recorded).
func TestMiddlewareAnswersAreTheTable(t *testing.T) {
	const body = `{"type":"Feature","id":"a","geometry":null,"properties":null}`
	type setup struct {
		cfg     middleware.Config
		store   *refusingClaims
		handler http.Handler
		runs    *atomic.Int64
	}
	newSetup := func(cfg middleware.Config, h http.HandlerFunc) *setup {
		s := &setup{cfg: cfg, store: &refusingClaims{Store: memstore.New(memstore.Config{})}, runs: new(atomic.Int64)}
		s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.runs.Add(1)
			if h != nil {
				h(w, r)
				return
			}
			w.WriteHeader(http.StatusCreated)
		})
		return s
	}
	req := func(key, b string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(b))
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		return r
	}
	cases := []struct {
		problem string
		setup   func() *setup
		// first gives the answer; follow is false when the key's fate is
		// another request's (409, 422 key-reused) or there is no key.
		first  func(s *setup, h http.Handler) *httptest.ResponseRecorder
		follow bool
	}{
		{"missing-key", func() *setup { return newSetup(middleware.Config{}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			return serveRec(h, req("", body))
		}, false},
		{"malformed-key", func() *setup { return newSetup(middleware.Config{}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			r := req("k", body)
			r.Header.Add("Idempotency-Key", "k2")
			return serveRec(h, r)
		}, false},
		{"body-too-large", func() *setup { return newSetup(middleware.Config{MaxBodyBytes: int64(len(body))}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			return serveRec(h, req("k", body+"  "))
		}, true},
		{"body-unreadable", func() *setup { return newSetup(middleware.Config{}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			r := req("k", "")
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader(body[:10]), errReader{io.ErrUnexpectedEOF}))
			r.ContentLength = -1
			return serveRec(h, r)
		}, true},
		{"store-unavailable", func() *setup { return newSetup(middleware.Config{}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			s.store.err = errors.New("connection refused")
			return serveRec(h, req("k", body))
		}, true},
		{"store-full", func() *setup { return newSetup(middleware.Config{}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			s.store.err = &keystore.FullError{RetryAfter: 5 * time.Second}
			return serveRec(h, req("k", body))
		}, true},
		{"client-full", func() *setup { return newSetup(middleware.Config{}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			s.store.err = &keystore.FullError{RetryAfter: 5 * time.Second, Client: true}
			return serveRec(h, req("k", body))
		}, true},
		{"request-in-flight", func() *setup {
			release := make(chan struct{})
			s := newSetup(middleware.Config{}, func(w http.ResponseWriter, r *http.Request) {
				<-release
				w.WriteHeader(http.StatusCreated)
			})
			h := s.handler
			s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Release") != "" {
					close(release)
					return
				}
				h.ServeHTTP(w, r)
			})
			return s
		}, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			done := make(chan struct{})
			go func() { defer close(done); serveRec(h, req("k", body)) }()
			var w *httptest.ResponseRecorder
			for { // the original holds the key once the handler has run
				if s.runs.Load() > 0 {
					w = serveRec(h, req("k", body))
					break
				}
				time.Sleep(time.Millisecond)
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil) // not covered: reaches the handler
			r.Header.Set("X-Release", "1")
			serveRec(h, r)
			<-done
			return w
		}, false},
		{"key-reused", func() *setup { return newSetup(middleware.Config{}, nil) }, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			serveRec(h, req("k", body))
			return serveRec(h, req("k", strings.Replace(body, `"a"`, `"b"`, 1)))
		}, false},
		{"invalid-request", func() *setup {
			return newSetup(middleware.Config{Validator: middleware.ValidatorFunc(func(*http.Request, []byte) error { return errors.New("no") })}, nil)
		}, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			return serveRec(h, req("k", body))
		}, true},
		{"response-not-replayable", func() *setup {
			return newSetup(middleware.Config{}, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusSwitchingProtocols)
			})
		}, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			serveRec(h, req("k", body)) // the original, passed on
			return serveRec(h, req("k", body))
		}, true},
		{"response-not-recorded", func() *setup {
			return newSetup(middleware.Config{MaxRecordBytes: 1024}, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(strings.Repeat("x", 4096)))
			})
		}, func(s *setup, h http.Handler) *httptest.ResponseRecorder {
			serveRec(h, req("k", body)) // the original, sent in full
			return serveRec(h, req("k", body))
		}, true},
	}
	for _, c := range cases {
		t.Run(c.problem, func(t *testing.T) {
			s := c.setup()
			m, err := middleware.New(s.store, s.cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(s.handler)
			w := c.first(s, h)
			row, ok := rowOf(c.problem, w.Code)
			if !ok {
				t.Fatalf("answer %d %s has no row in answer.Table", w.Code, w.Body)
			}
			d, _ := problem.Parse(w.Header().Get("Content-Type"), w.Body.Bytes())
			if d.Name() != c.problem {
				t.Fatalf("answer %d %s, want problem type %s", w.Code, w.Body, c.problem)
			}
			ra := w.Header().Get("Retry-After")
			if (ra != "") != (row.RetryAfter != "") {
				t.Errorf("Retry-After %q; the table says %q", ra, row.RetryAfter)
			}
			_, valid := client.ParseRetryAfter(ra, "", time.Now())
			if got := client.RetryableStatus(w.Code, valid); got != row.Retry {
				t.Errorf("the sender retries it: %v; the table says %v", got, row.Retry)
			}
			if !c.follow {
				return
			}
			runs := s.runs.Load()
			s.cfg.Validator = nil
			next := serveRec(h, req("k", body))
			replayed := next.Header().Get("Idempotent-Replayed") == "true"
			switch row.Key {
			case answer.NotClaimed, answer.Released:
				if replayed || s.runs.Load() != runs+1 {
					t.Errorf("the next request with the key: %d, replayed %v, runs %d→%d; the table says %s, so it runs", next.Code, replayed, runs, s.runs.Load(), row.Key)
				}
			case answer.Refused:
				if replayed || next.Code != w.Code || next.Body.String() != w.Body.String() {
					t.Errorf("the same bytes again: %d %s, replayed %v; the table says %s, so the same answer, not replayed", next.Code, next.Body, replayed, row.Key)
				}
			case answer.Recorded:
				if !replayed || next.Code != w.Code || s.runs.Load() != runs {
					t.Errorf("the next request with the key: %d, replayed %v; the table says %s, so replayed", next.Code, replayed, row.Key)
				}
			}
		})
	}
}

// rowOf finds the row of problem type p answered with status.
func rowOf(p string, status int) (answer.Row, bool) {
	for _, r := range answer.Table {
		if r.Problem == p && (r.Status == status || r.Status == answer.AnyStatus) {
			return r, true
		}
	}
	return answer.Row{}, false
}

func serveRec(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
