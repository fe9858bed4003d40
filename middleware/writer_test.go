package middleware_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// capabilities answers with the optional interfaces its writer shows to
// type assertions.
var capabilities = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, f := w.(http.Flusher)
	_, h := w.(http.Hijacker)
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "flusher=%v hijacker=%v", f, h)
})

func postTo(t *testing.T, url, key string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(feature))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// http.Flusher and http.Hijacker stay visible to type assertions behind the
// middleware where the server's writer has them (an HTTP/1 server's has
// both), and Hijacker stays hidden where it has not (httptest's recorder).
func TestFlusherAndHijackerStayVisible(t *testing.T) {
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	srv := httptest.NewServer(m.Handler(capabilities))
	defer srv.Close()
	if _, body := postTo(t, srv.URL, "k1"); body != "flusher=true hijacker=true" {
		t.Errorf("behind the middleware on an HTTP/1 server: %s, want flusher=true hijacker=true", body)
	}
	if w := serve(m.Handler(capabilities), post("k2", feature)); w.Body.String() != "flusher=true hijacker=false" {
		t.Errorf("behind the middleware on httptest.ResponseRecorder: %s, want flusher=true hijacker=false", w.Body)
	}
}

// Flushing through a type assertion or http.ResponseController streams the
// response and keeps it recorded.
func TestFlushStreamsAndRecords(t *testing.T) {
	m := newMiddleware(t, new(memstore.Store), middleware.Config{})
	for name, flush := range map[string]func(http.ResponseWriter) error{
		"Flusher":            func(w http.ResponseWriter) error { w.(http.Flusher).Flush(); return nil },
		"ResponseController": func(w http.ResponseWriter) error { return http.NewResponseController(w).Flush() },
	} {
		t.Run(name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "event: one\n\n")
				if err := flush(w); err != nil {
					t.Errorf("flush: %v", err)
				}
				io.WriteString(w, "event: two\n\n")
			})
			rec := httptest.NewRecorder()
			m.Handler(h).ServeHTTP(rec, post("k-"+name, feature))
			if !rec.Flushed || rec.Code != http.StatusOK {
				t.Fatalf("flushed %v, status %d; want the flush to reach the writer", rec.Flushed, rec.Code)
			}
			again := serve(m.Handler(h), post("k-"+name, feature))
			if again.Body.String() != "event: one\n\nevent: two\n\n" {
				t.Errorf("replay: %q", again.Body)
			}
		})
	}
}

// A hijacked connection's answer, and a 101 Switching Protocols, cannot be
// replayed: the key is completed with a problem saying so, never with an
// empty 200, and the handler does not run again.
func TestUnreplayableResponses(t *testing.T) {
	var runs atomic.Int64
	for name, h := range map[string]http.HandlerFunc{
		"Hijacker": func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			defer conn.Close()
			buf.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
			buf.Flush()
		},
		"ResponseController": func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			defer conn.Close()
			buf.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
			buf.Flush()
		},
		"101": func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Upgrade", "example/1")
			w.WriteHeader(http.StatusSwitchingProtocols)
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack after 101: %v", err)
				return
			}
			defer conn.Close()
			buf.WriteString("hello in another protocol")
			buf.Flush()
		},
	} {
		t.Run(name, func(t *testing.T) {
			runs.Store(0)
			m := newMiddleware(t, new(memstore.Store), middleware.Config{})
			srv := httptest.NewServer(m.Handler(h))
			defer srv.Close()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k1\r\nContent-Length: %d\r\n\r\n%s", len(feature), feature)
			if _, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil {
				t.Fatalf("first answer: %v", err)
			}
			conn.Close()
			// The record is written just after the handler returns.
			var resp *http.Response
			var body string
			for range 400 {
				if resp, body = postTo(t, srv.URL, "k1"); resp.StatusCode != http.StatusConflict {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if runs.Load() != 1 {
				t.Fatalf("handler ran %d times, want 1", runs.Load())
			}
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, middleware.ProblemNotReplayable) ||
				resp.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("retry: %d %s replayed=%q, want a replayed 422 %s", resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"), middleware.ProblemNotReplayable)
			}
		})
	}
}

// Trailers named in ReplayHeaders are recorded and replayed as trailers,
// whether declared with the Trailer header or set with http.TrailerPrefix.
func TestReplayHeaderTrailersAreReplayed(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"declared": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Checksum")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "body")
			w.Header().Set("X-Checksum", "c1")
		},
		"TrailerPrefix": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "body")
			http.NewResponseController(w).Flush() // chunked: room for trailers
			w.Header().Set(http.TrailerPrefix+"X-Checksum", "c1")
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := newMiddleware(t, new(memstore.Store), middleware.Config{ReplayHeaders: append([]string{"X-Checksum"}, middleware.DefaultReplayHeaders...)})
			srv := httptest.NewServer(m.Handler(h))
			defer srv.Close()
			for i, want := range []string{"", "true"} {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(feature))
				req.Header.Set("Idempotency-Key", "k1")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated || string(body) != "body" || resp.Header.Get("Idempotent-Replayed") != want {
					t.Fatalf("call %d: %d %q replayed=%q", i, resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"))
				}
				if got := resp.Trailer.Get("X-Checksum"); got != "c1" {
					t.Errorf("call %d: trailer X-Checksum = %q, want c1 (trailers %v, header %v)", i, got, resp.Trailer, resp.Header)
				}
			}
		})
	}
}

// A ReplayHeaders entry must be a header field name: "Trailer:X" (net/http's
// TrailerPrefix form) or a name with spaces would be replayed in a form the
// handler never sent.
func TestNewRefusesInvalidReplayHeaderNames(t *testing.T) {
	for _, name := range []string{http.TrailerPrefix + "X-Checksum", "X Checksum", "", "X-Ä"} {
		if _, err := middleware.New(new(memstore.Store), middleware.Config{ReplayHeaders: []string{name}}); err == nil {
			t.Errorf("New accepted ReplayHeaders %q", name)
		}
	}
	if _, err := middleware.New(new(memstore.Store), middleware.Config{ReplayHeaders: []string{"x-checksum", "ETag", "X_Odd.Name~1"}}); err != nil {
		t.Errorf("New refused valid names: %v", err)
	}
}
