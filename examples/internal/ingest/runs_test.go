package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/geoidem/geoidem/keystore"
)

func featureBody(id string) string {
	return `{"type":"Feature","id":"` + id + `","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
}

// postHeld posts body to h as the run of key (a keystore.Hold in its
// context, as the middleware would give it), without the middleware: so a
// test can run a key's handler twice, as after a lost record.
func postHeld(h http.Handler, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r = r.WithContext(keystore.ContextWithHold(r.Context(), &keystore.Hold{Key: key, Token: 1}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A key whose handler runs twice (its record lost) is counted twice before
// the write, though the in-memory store writes its features once: the skip
// is counted on its own, in Runs, the run log and the metrics.
func TestRunsCountWhatTheGuardSkips(t *testing.T) {
	reg := prometheus.NewRegistry()
	var log bytes.Buffer
	runs := newRunCounter(reg, &log, true)
	repo := newMemFeatures(0, 0, runs.skip)
	h := postFeatures(repo, runs, 0, time.Second, slog.New(slog.DiscardHandler), "")
	for _, p := range []struct{ key, id string }{{"k1", "a"}, {"k1", "a"}, {"k2", "b"}} {
		if w := postHeld(h, p.key, featureBody(p.id)); w.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", p.id, w.Code, w.Body)
		}
	}
	if got, want := runs.attempts(), map[string]int{"a": 2, "b": 1}; !maps.Equal(got, want) {
		t.Errorf("attempts %v, want %v", got, want)
	}
	writes, _ := repo.writes(context.Background())
	effects, skipped, _ := repo.effects(context.Background())
	if want := map[string]int{"a": 1, "b": 1}; !maps.Equal(writes, want) {
		t.Errorf("writes %v, want %v: the guard writes a key's features once", writes, want)
	}
	if want := map[string]int{"a": 2, "b": 1}; !maps.Equal(effects, want) {
		t.Errorf("effects %v, want %v: a skipped write is a second run", effects, want)
	}
	if want := map[string]int{"a": 1}; !maps.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	logged, err := ReadRunLog(bytes.NewReader(log.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(logged.Attempts, map[string]int{"a": 2, "b": 1}) || !maps.Equal(logged.Skipped, map[string]int{"a": 1}) {
		t.Errorf("run log %q read as %+v", log.String(), logged)
	}
	w := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	m := w.Body
	for _, line := range []string{"geoidem_feature_runs_total 3\n", "geoidem_feature_write_skips_total 1\n"} {
		if !strings.Contains(m.String(), line) {
			t.Errorf("metrics lack %q:\n%s", line, m.String())
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A run the run log cannot take stops before the write, answered 503: a
// count that missed a run would pass a test wrongly.
func TestRunLogFailureStopsTheRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	runs := newRunCounter(reg, failingWriter{}, true)
	repo := newMemFeatures(0, 0, runs.skip)
	h := postFeatures(repo, runs, 0, time.Second, slog.New(slog.DiscardHandler), "")
	if w := postHeld(h, "k1", featureBody("a")); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("POST with a failing run log: %d %s, want 503 with Retry-After", w.Code, w.Body)
	}
	if w, _ := repo.writes(context.Background()); len(w) != 0 {
		t.Errorf("writes %v after a run the log missed, want none", w)
	}
	if a := runs.attempts(); len(a) != 0 {
		t.Errorf("attempts %v, want none", a)
	}
}

// Through the middleware, a retry is replayed and runs nothing; a write the
// full in-memory store refused is an attempt without effect.
func TestServiceRuns(t *testing.T) {
	var log bytes.Buffer
	svc, err := New(context.Background(), Config{MaxFeatures: 1, RunLog: &log, CountRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	for _, p := range []struct {
		key, id string
		code    int
	}{{"k1", "a", 201}, {"k1", "a", 201}, {"k2", "b", 507}, {"k2", "b", 507}} {
		if w := postTo(h, p.key, featureBody(p.id)); w.Code != p.code {
			t.Fatalf("POST %s with %s: %d %s, want %d", p.id, p.key, w.Code, w.Body, p.code)
		}
	}
	r, err := svc.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(r.Attempts, map[string]int{"a": 1, "b": 2}) || !maps.Equal(r.Effects, map[string]int{"a": 1}) || len(r.Skipped) != 0 {
		t.Errorf("runs %+v; want attempts a:1 b:2 (the replay runs nothing; both refused writes were attempts), effects a:1, no skips", r)
	}
	logged, err := ReadRunLog(&log)
	if err != nil || !maps.Equal(logged.Attempts, r.Attempts) {
		t.Errorf("run log %+v (%v), want the attempts %v", logged, err, r.Attempts)
	}
}

func TestReadRunLog(t *testing.T) {
	log := "run \"a\"\nrun \"id with space\\nand newline\"\nskip \"a\"\nrun \"a\"\nrun \"cut sh"
	r, err := ReadRunLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(r.Attempts, map[string]int{"a": 2, "id with space\nand newline": 1}) || !maps.Equal(r.Skipped, map[string]int{"a": 1}) {
		t.Errorf("%+v", r)
	}
	for _, bad := range []string{"run a\n", "walk \"a\"\n", "run\n"} {
		if _, err := ReadRunLog(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadRunLog(%q): no error", bad)
		}
	}
}

// A PostgreSQL run whose transaction rolled back is an attempt, not an
// effect: the writes column, incremented inside the handler's transaction,
// counts only the retry that committed. Since a claimed request runs to its
// end whether or not its client waits, what rolls a write back is the
// deadline the service configures (HandlerTimeout): the write pauses 10 s
// before it commits, the deadline is 1 s.
func TestRunsPostgresRolledBackAttemptIsNoEffect(t *testing.T) {
	url := os.Getenv("GEOIDEM_TEST_POSTGRES")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	suffix := fmt.Sprintf("%08x", rand.Uint32())
	keys, features := "runs_keys_"+suffix, "runs_features_"+suffix
	t.Cleanup(func() { dropPgTables(t, url, keys, features) })
	log := new(lockedBuffer)
	cfg := Config{Store: url, KeyTable: keys, FeaturesTable: features, RunLog: log, CountRuns: true,
		WriteDelay: 10 * time.Second, HandlerTimeout: time.Second}
	slow, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	defer slow.Close()
	cfg.WriteDelay = 0
	fast, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()

	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/features", strings.NewReader(featureBody("a")))
	r.Header.Set("Content-Type", "application/geo+json")
	r.Header.Set("Idempotency-Key", "k1")
	w := httptest.NewRecorder()
	slow.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("the run past its HandlerTimeout: %d %s, want 503 (rolled back, key released)", w.Code, w.Body)
	}
	if w := postTo(fast.Handler(), "k1", featureBody("a")); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry: %d %s, want 201, executed", w.Code, w.Body)
	}
	first, err := slow.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := fast.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Attempts["a"] != 1 || second.Attempts["a"] != 1 || !maps.Equal(second.Effects, map[string]int{"a": 1}) || second.Skipped != nil {
		t.Errorf("attempts %v and %v, effects %v, skipped %v; want one attempt in each service, one effect, no guard",
			first.Attempts, second.Attempts, second.Effects, second.Skipped)
	}
	logged, err := ReadRunLog(bytes.NewReader(log.Bytes()))
	if err != nil || logged.Attempts["a"] != 2 {
		t.Errorf("run log of both services: %+v (%v), want 2 attempts of a", logged, err)
	}
}

func dropPgTables(t *testing.T, url, keys, features string) {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Errorf("dropping %s, %s: %v", keys, features, err)
		return
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + pgx.Identifier{features}.Sanitize(), "DROP TABLE IF EXISTS " + pgx.Identifier{keys}.Sanitize() + " CASCADE",
		"DROP TABLE IF EXISTS " + pgx.Identifier{keys + "_migrations"}.Sanitize(), "DROP SEQUENCE IF EXISTS " + pgx.Identifier{keys + "_token_seq"}.Sanitize(),
	} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

// Without Config.CountRuns no per-id map grows with every id written; the
// /metrics totals are kept.
func TestRunsPerIDOnlyWhenAsked(t *testing.T) {
	svc, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if w := postTo(svc.Handler(), "k1", featureBody("a")); w.Code != http.StatusCreated {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	r, err := svc.Runs(context.Background())
	if err != nil || r.Attempts != nil || r.Effects["a"] != 1 {
		t.Errorf("runs %+v (%v); want no attempts kept, effects a:1", r, err)
	}
	w := httptest.NewRecorder()
	svc.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(w.Body.String(), "geoidem_feature_runs_total 1\n") {
		t.Errorf("metrics lack geoidem_feature_runs_total 1:\n%s", w.Body)
	}
}

// lockedBuffer is a run log both services write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
