package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/internal/geofeature"
	"github.com/geoidem/geoidem/internal/senderclock"
)

// The tests' clocks reach the sender and the journal through the
// repository's internal clock hook.
func init() {
	setClock = func(config any, c clock) { senderclock.Set(config, c) }
}

// fakeClock never sleeps: Sleep advances it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return nil
}

// receiver is a small stand-in for the geoidem middleware in front of an
// ingest handler: it records each key's answer and replays it, answers 422
// to a key reused with another payload, and misbehaves on demand through a
// feature's "mode" property.
type receiver struct {
	mu       sync.Mutex
	records  map[string]record // by key
	attempts map[string]int    // by key
	requests int
	bodies   map[string][]byte // first body by key
	executed int               // handler runs: first answers that were not replays
	healed   bool              // "down" features are accepted
	mismatch int               // 422 key reused with another payload
}

func (rv *receiver) executions() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.executed
}

func (rv *receiver) heal() {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.healed = true
}

func (rv *receiver) attemptsOf(key string) int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.attempts[key]
}

func (rv *receiver) mismatches() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.mismatch
}

// newServer serves rv on loopback until the test ends.
func newServer(t *testing.T, rv *receiver) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(rv)
	t.Cleanup(srv.Close)
	return srv
}

type record struct {
	sum    [32]byte
	status int
	body   string
}

func newReceiver() *receiver {
	return &receiver{records: map[string]record{}, attempts: map[string]int{}, bodies: map[string][]byte{}}
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	sum := sha256.Sum256(body)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.requests++
	rv.attempts[key]++
	if r.Header.Get("Content-Type") != "application/geo+json" || key == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if rec, ok := rv.records[key]; ok {
		if rec.sum != sum {
			rv.mismatch++
			problemOf(w, http.StatusUnprocessableEntity, problemTypes+"key-reused", "Idempotency key reused")
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(rec.status)
		io.WriteString(w, rec.body)
		return
	}
	var f struct {
		ID         string         `json:"id"`
		Properties map[string]any `json:"properties"`
	}
	json.Unmarshal(body, &f)
	if _, ok := f.Properties["observation_time"].(string); !ok {
		problem(w, http.StatusUnprocessableEntity, "no observation_time")
		return
	}
	switch f.Properties["mode"] {
	case "bad":
		rv.records[key] = record{sum, 422, ""}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, badProblem)
		return
	case "flaky":
		if rv.attempts[key] == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	case "down":
		if rv.healed {
			break
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case "full": // the key store is full for the day
		w.Header().Set("Retry-After", "85811")
		problemOf(w, http.StatusServiceUnavailable, problemTypes+"store-full", "Key store full")
		return
	case "busy": // the key store is full for 2 s
		if rv.attempts[key] == 1 {
			w.Header().Set("Retry-After", "2")
			problemOf(w, http.StatusServiceUnavailable, problemTypes+"store-full", "Key store full")
			return
		}
	}
	rv.bodies[key] = body
	rv.executed++
	rec := record{sum, http.StatusCreated, fmt.Sprintf(`{"stored":%q}`, f.ID)}
	rv.records[key] = rec
	w.WriteHeader(rec.status)
	io.WriteString(w, rec.body)
}

func problem(w http.ResponseWriter, status int, title string) {
	problemOf(w, status, "about:blank", title)
}

// badProblem is the answer to an invalid feature: an invalid-geojson
// problem document, with its list of problems, each with its JSON pointer.
const badProblem = `{"type":"` + problemTypes + `invalid-geojson","title":"Invalid geometry","status":422,` +
	`"detail":"the body is not valid GeoJSON: 2 problem(s)","errors":[` +
	`{"pointer":"/geometry/coordinates","rule":"position","detail":"a position needs at least two numbers"},` +
	`{"pointer":"/geometry/type","rule":"geometry-type","detail":"unknown geometry type \"Pointe\""}]}`

// problemTypes is the prefix of the middleware's problem types.
const problemTypes = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#"

func problemOf(w http.ResponseWriter, status int, typ, title string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":%q,"title":%q,"status":%d}`, typ, title, status)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type runResult struct {
	code           int
	stdout, stderr string
}

func runApp(t *testing.T, a app, args ...string) runResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if a.clock == nil {
		a.clock = &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	}
	if !slices.Contains(args, "-journal") { // never the user's own journal
		args = append([]string{"-journal", filepath.Join(t.TempDir(), "sender.journal")}, args...)
	}
	code := a.run(context.Background(), args, &stdout, &stderr)
	return runResult{code, stdout.String(), stderr.String()}
}

const collection = `{
  "type": "FeatureCollection",
  "features": [
    {"type": "Feature", "id": "a", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"n": 1}},
    {"type": "Feature", "id": "b", "geometry": {"type": "Point", "coordinates": [3, 4]}, "properties": {"mode": "flaky"}}
  ]
}`

// ndjson repeats feature a of the collection, byte for byte the same once
// compacted: a duplicate, which the receiver replays.
const ndjson = `{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":1}}

{"type":"Feature","id":"c","geometry":null,"properties":{"observation_time":"2020-01-01T00:00:00Z"}}
`

func TestRunDelivers(t *testing.T) {
	rv := newReceiver()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	fc := writeFile(t, "in.geojson", collection)
	nd := writeFile(t, "in.ndjson", ndjson)

	r := runApp(t, app{hc: srv.Client()}, "-url", srv.URL+"/features", fc, nd)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"4 features to " + srv.URL, "delivered           4", "replayed          1", "not delivered       0", "dead-lettered       0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\r") {
		t.Error("progress line written to a non-terminal")
	}
	if rv.requests != 5 { // a, b twice (503, then 201), a again (replayed), c
		t.Errorf("%d requests, want 5", rv.requests)
	}
	// The key is geofeature.Key of the feature as read; the body is stamped.
	keyA, _ := geofeature.Key([]byte(`{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":1}}`))
	body, ok := rv.bodies[keyA]
	if !ok {
		t.Fatalf("no delivery under key %s; keys %v", keyA, rv.attempts)
	}
	if want := `{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":1,"observation_time":"2026-03-01T12:00:00Z"}}`; string(body) != want {
		t.Errorf("body of a = %s, want %s", body, want)
	}
	keyC, _ := geofeature.Key([]byte(`{"type":"Feature","id":"c","geometry":null,"properties":{"observation_time":"2020-01-01T00:00:00Z"}}`))
	if !strings.Contains(string(rv.bodies[keyC]), `"observation_time":"2020-01-01T00:00:00Z"`) {
		t.Errorf("an existing observation_time was changed: %s", rv.bodies[keyC])
	}
}

func TestRunFailures(t *testing.T) {
	rv := newReceiver()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	in := writeFile(t, "in.ndjson", `{"type":"Feature","id":"ok","geometry":null,"properties":null}
{"type":"Feature","id":"bad","geometry":null,"properties":{"mode":"bad"}}
{"type":"Feature","id":"down","geometry":null,"properties":{"mode":"down"}}
`)
	dead := filepath.Join(t.TempDir(), "dead.jsonl")
	r := runApp(t, app{hc: srv.Client()}, "-url", srv.URL, "-attempts", "3", "-base", "1s", "-cap", "2s", "-dead-letter", dead, in)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"delivered           1", "not delivered       2", "    permanent         1", "    exhausted         1", "dead-lettered       2 (" + dead + ")"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "in.ndjson:2") || !strings.Contains(r.stderr, "Invalid geometry") || !strings.Contains(r.stderr, "in.ndjson:3") {
		t.Errorf("stderr does not name the failures:\n%s", r.stderr)
	}
	f, err := os.Open(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reasons := map[string]client.DeadLetter{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var dl client.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
			t.Fatal(err)
		}
		reasons[dl.Reason] = dl
	}
	if p := reasons["permanent"]; p.Attempts != 1 || p.LastStatus != 422 || !strings.Contains(string(p.Body), `"id":"bad"`) {
		t.Errorf("permanent dead letter = %+v", p)
	}
	if e := reasons["exhausted"]; e.Attempts != 3 || e.LastStatus != 503 || !strings.Contains(string(e.Body), `"id":"down"`) || e.ContentType != "application/geo+json" {
		t.Errorf("exhausted dead letter = %+v", e)
	}
}

func TestRunUsage(t *testing.T) {
	in := writeFile(t, "in.ndjson", `{"type":"Feature","geometry":null,"properties":null}`)
	for name, args := range map[string][]string{
		"no arguments":      {},
		"no url":            {in},
		"relative url":      {"-url", "/features", in},
		"no files":          {"-url", "http://127.0.0.1:1/"},
		"unknown flag":      {"-bogus", "-url", "http://127.0.0.1:1/", in},
		"negative attempts": {"-url", "http://127.0.0.1:1/", "-attempts", "-1", in},
		"cap below base":    {"-url", "http://127.0.0.1:1/", "-base", "2s", "-cap", "1s", in},
		"bad duration":      {"-url", "http://127.0.0.1:1/", "-deadline", "soon", in},
		"bad strategy":      {"-url", "http://127.0.0.1:1/", "-strategy", "random", in},
		"negative deadline": {"-url", "http://127.0.0.1:1/", "-deadline", "-1s", in},
		"zero concurrent":   {"-url", "http://127.0.0.1:1/", "-concurrency", "0", in},
		"redrive + input":   {"-redrive", in, in},
		"empty journal":     {"-url", "http://127.0.0.1:1/", "-journal", "", in},
	} {
		r := runApp(t, app{}, args...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2", name, r.code)
		}
		if !strings.Contains(r.stderr, "usage: sender") {
			t.Errorf("%s: no usage on stderr:\n%s", name, r.stderr)
		}
	}
	if r := runApp(t, app{}, "-h"); r.code != 0 || !strings.Contains(r.stderr, "-dead-letter") {
		t.Errorf("-h: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestRunBadInput(t *testing.T) {
	rv := newReceiver()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	good := writeFile(t, "good.ndjson", `{"type":"Feature","geometry":null,"properties":null}`)
	for name, tc := range map[string]struct{ content, want string }{
		"not JSON":       {"{\"type\":\"Feature\",\"geometry\":null}\n\nnot json\n", "bad.json:3"},
		"not a feature":  {`{"type":"Point","coordinates":[1,2]}`, `type "Point"`},
		"bad properties": {`{"type":"FeatureCollection","features":[{"type":"Feature","properties":[1]}]}`, "bad.json:1#0"},
		"array":          {`[{"type":"Feature"}]`, "not a GeoJSON object"},
	} {
		bad := writeFile(t, "bad.json", tc.content)
		r := runApp(t, app{hc: srv.Client()}, "-url", srv.URL, good, bad)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", name, r.code, r.stderr, tc.want)
		}
	}
	empty := writeFile(t, "empty.json", `{"type":"FeatureCollection","features":[]}`+"\n")
	if r := runApp(t, app{hc: srv.Client()}, "-url", srv.URL, empty); r.code != 1 || !strings.Contains(r.stderr, "no features") {
		t.Errorf("no features: exit %d, stderr %q", r.code, r.stderr)
	}
	r := runApp(t, app{hc: srv.Client()}, "-url", srv.URL, filepath.Join(t.TempDir(), "missing.json"))
	if r.code != 1 || !strings.Contains(r.stderr, "missing.json") {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.stderr)
	}
	if rv.requests != 0 {
		t.Errorf("%d requests sent despite bad input", rv.requests)
	}
}

func TestRunProgress(t *testing.T) {
	rv := newReceiver()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	in := writeFile(t, "in.geojson", collection)
	r := runApp(t, app{hc: srv.Client(), terminal: func(io.Writer) bool { return true }}, "-url", srv.URL, "-concurrency", "2", in)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "\r\033[K2/2  delivered 2 (replayed 0)  failed 0\n") {
		t.Errorf("no final progress line in %q", r.stdout)
	}
}

// TestRunCanceled: a stop (SIGINT) before the first delivery sends
// nothing and dead-letters nothing (the rule was once to dead-letter
// every feature as "canceled after 0 attempts"; now they are left for a
// re-run): the summary counts them as interrupted, the exit status is 130.
func TestRunCanceled(t *testing.T) {
	rv := newReceiver()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	in := writeFile(t, "in.geojson", collection)
	dead := filepath.Join(t.TempDir(), "dead.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as if SIGINT arrived before the first delivery
	var stdout, stderr bytes.Buffer
	a := app{hc: srv.Client(), clock: &fakeClock{}}
	journal := filepath.Join(t.TempDir(), "journal")
	if code := a.run(ctx, []string{"-url", srv.URL, "-journal", journal, "-dead-letter", dead, in}, &stdout, &stderr); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	for _, want := range []string{"dead-lettered       0", "interrupted         2", "(interrupted)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout.String())
		}
	}
	if rv.requests != 0 {
		t.Errorf("%d requests after cancellation", rv.requests)
	}
}

func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}
