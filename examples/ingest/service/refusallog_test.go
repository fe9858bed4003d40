package service

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/internal/ratelog"
	"github.com/geoidem/geoidem/middleware"
)

// syncBuffer is a bytes.Buffer safe for the service's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records returns the JSON log records written so far whose message is
// msg.
func (s *syncBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range s.all(t) {
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// all returns the JSON log records written so far.
func (s *syncBuffer) all(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// newLoggedService returns the service on the memory store, logging at
// Info (examples/ingest's level without -v) as JSON into the buffer.
func newLoggedService(t *testing.T) (*Service, *syncBuffer) {
	t.Helper()
	buf := new(syncBuffer)
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc, err := New(context.Background(), Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return svc, buf
}

const unclosedRing = `{"type":"Feature","id":"a1","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]},"properties":null}`

// A refusal is logged without -v: one record for a 422, with the method,
// the path, the client's address, the Idempotency-Key and the problem
// type, so an operator can tell a sender why its events bounce. A success
// and a route the service lacks are not refusals.
func TestRefusalIsLogged(t *testing.T) {
	svc, buf := newLoggedService(t)
	h := svc.Handler()
	if w := postTo(h, `"evt-ok"`, `{"type":"Feature","id":"p1","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`); w.Code != http.StatusCreated {
		t.Fatalf("valid POST: %d %s", w.Code, w.Body)
	}
	r := httptest.NewRequest(http.MethodGet, "/nothing-here", nil)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if w := postTo(h, `"evt-9"`, unclosedRing); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("unclosed ring: %d %s, want 422", w.Code, w.Body)
	}
	recs := buf.records(t, refusalMessage)
	if len(recs) != 1 {
		t.Fatalf("%d refusal records, want 1 (the 422): %v", len(recs), recs)
	}
	want := map[string]any{
		"level":   "WARN",
		"method":  "POST",
		"path":    "/features",
		"addr":    "192.0.2.1:1234", // httptest's client
		"key":     `"evt-9"`,
		"status":  float64(http.StatusUnprocessableEntity),
		"problem": "invalid-geojson",
	}
	for k, v := range want {
		if recs[0][k] != v {
			t.Errorf("refusal record's %s = %v, want %v (record %v)", k, recs[0][k], v, recs[0])
		}
	}
}

// Every status the brief of a refusal covers is logged: 400 (malformed
// JSON), 415 (a wrong Content-Type), 413 (a body over the bound); each with
// its problem type.
func TestRefusalStatusesAreLogged(t *testing.T) {
	svc, buf := newLoggedService(t)
	h := svc.Handler()
	post := func(contentType, body string) int {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Idempotency-Key", `"k-`+strconv.Itoa(len(body))+contentType+`"`)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	codes := []int{
		post("application/geo+json", `{"type":`),
		post("text/plain", `{}`),
		post("application/geo+json", `{"type":"Feature","geometry":null,"properties":{"x":"`+strings.Repeat("x", middleware.DefaultMaxBodyBytes)+`"}}`),
	}
	recs := buf.records(t, refusalMessage)
	if len(recs) != len(codes) {
		t.Fatalf("answers %v gave %d refusal records, want %d: %v", codes, len(recs), len(codes), recs)
	}
	for i, rec := range recs {
		if rec["status"] != float64(codes[i]) || rec["problem"] == nil || rec["problem"] == "" {
			t.Errorf("record %d: %v, want status %d and a problem type", i, rec, codes[i])
		}
	}
}

// A flood of refusals is not a flood of log lines: within one interval at
// most ratelog.DefaultBurst records are written.
func TestRefusalFloodIsRateLimited(t *testing.T) {
	svc, buf := newLoggedService(t)
	h := svc.Handler()
	for i := range 200 {
		if w := postTo(h, `"flood-`+strconv.Itoa(i)+`"`, unclosedRing); w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("POST %d: %d, want 422", i, w.Code)
		}
	}
	if n := len(buf.records(t, refusalMessage)); n != ratelog.DefaultBurst {
		t.Errorf("200 refusals wrote %d records, want %d (the bound)", n, ratelog.DefaultBurst)
	}
}

// The refusal log's writer drops no optional interface: behind it a
// handler still flushes and hijacks on a server that offers both, and is
// offered no Hijacker where the server has none.
func TestRefusalLogKeepsFlusherAndHijacker(t *testing.T) {
	var flusher, hijacker bool
	h := logRefusals(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, flusher = w.(http.Flusher)
		_, hijacker = w.(http.Hijacker)
		w.WriteHeader(http.StatusNoContent)
	}), slog.New(slog.DiscardHandler), "Idempotency-Key", nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if !flusher || !hijacker {
		t.Errorf("behind the refusal log on a net/http server: Flusher %v, Hijacker %v; want both", flusher, hijacker)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if !flusher || hijacker {
		t.Errorf("behind the refusal log on a recorder: Flusher %v, Hijacker %v; want a Flusher only", flusher, hijacker)
	}
}

// A refusal the front door answers (429 client-busy, 503 server-busy) is
// logged once: the Door logs it itself, with the client, so the service's
// own refusal log leaves it out.
func TestDoorRefusalIsLoggedOnce(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := middleware.ValidatorFunc(func(r *http.Request, body []byte) error {
		once.Do(func() { close(entered); <-release })
		return nil
	})
	buf := new(syncBuffer)
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc, err := New(context.Background(), Config{Logger: log, MaxInFlight: 1, Validator: hold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	h := svc.Handler()
	first := make(chan int)
	go func() {
		first <- postTo(h, `"held"`, `{"type":"Feature","id":"h","geometry":null,"properties":null}`).Code
	}()
	<-entered
	w := postTo(h, `"refused"`, `{"type":"Feature","id":"r","geometry":null,"properties":null}`)
	close(release)
	if code := <-first; code != http.StatusCreated {
		t.Fatalf("the request holding the only work slot: %d, want 201", code)
	}
	if w.Code != http.StatusTooManyRequests && w.Code != http.StatusServiceUnavailable {
		t.Fatalf("a second request while the only work slot is held: %d %s, want 429 or 503 from the front door", w.Code, w.Body)
	}
	var refusals []map[string]any
	for _, rec := range buf.all(t) {
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "request refused") {
			refusals = append(refusals, rec)
		}
	}
	if len(refusals) != 1 {
		t.Fatalf("one refusal (%d) logged %d times, want once: %v", w.Code, len(refusals), refusals)
	}
}
