package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/newest"
)

func featureBody(id string) string {
	return `{"type":"Feature","id":"` + id + `","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
}

func postTo(h http.Handler, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/geo+json")
	r.Header.Set("Idempotency-Key", key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A handler run again for one key (its record lost) is two attempts and
// two effects: the service's feature store has no per-key guard that
// would hide the second run, and the counter sees both.
func TestRunCounterCountsEveryRun(t *testing.T) {
	var log bytes.Buffer
	c := newRunCounter(&log, 0)
	var counted service.FeatureStore
	svc, err := service.New(context.Background(), service.Config{WrapFeatures: func(fs service.FeatureStore) service.FeatureStore {
		counted = c.wrap(fs)
		return counted
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	answer := func([]newest.Verdict) service.Answer { return service.Answer{StatusCode: 201} }
	for _, id := range []string{"a", "a", "b"} { // a's run, and its second run
		if _, err := counted.Upsert(context.Background(), nil, []service.Feature{{ID: id, Raw: []byte(featureBody(id))}}, answer); err != nil {
			t.Fatal(err)
		}
	}
	attempts, effects, writes := c.counts()
	want := map[string]int{"a": 2, "b": 1}
	if !maps.Equal(attempts, want) || !maps.Equal(effects, want) || !maps.Equal(writes, want) {
		t.Errorf("attempts %v, effects %v, writes %v; want %v each", attempts, effects, writes, want)
	}
	logged, err := readRunLog(&log)
	if err != nil || !maps.Equal(logged, want) {
		t.Errorf("run log %q read as %v (%v), want %v", log.String(), logged, err, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A run the run log cannot take stops before the write, answered 503 with
// Retry-After (an error the service does not know is transient): a count
// that missed a run would pass a test wrongly.
func TestRunLogFailureStopsTheRun(t *testing.T) {
	c := newRunCounter(failingWriter{}, 0)
	svc, err := service.New(context.Background(), service.Config{WrapFeatures: c.wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if w := postTo(svc.Handler(), "k1", featureBody("a")); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("POST with a failing run log: %d %s, want 503 with Retry-After", w.Code, w.Body)
	}
	w := httptest.NewRecorder()
	svc.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/features/a", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("GET /features/a after a run the log missed: %d, want 404", w.Code)
	}
	if a, e, _ := c.counts(); len(a) != 0 || len(e) != 0 {
		t.Errorf("attempts %v, effects %v; want none", a, e)
	}
}

// Through the middleware, a retry is replayed and runs nothing; a write the
// full in-memory store refused is an attempt without effect.
func TestRunCounterThroughTheService(t *testing.T) {
	var log bytes.Buffer
	c := newRunCounter(&log, 0)
	svc, err := service.New(context.Background(), service.Config{MaxFeatures: 1, WrapFeatures: c.wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for _, p := range []struct {
		key, id string
		code    int
	}{{"k1", "a", 201}, {"k1", "a", 201}, {"k2", "b", 507}, {"k2", "b", 507}} {
		if w := postTo(svc.Handler(), p.key, featureBody(p.id)); w.Code != p.code {
			t.Fatalf("POST %s with %s: %d %s, want %d", p.id, p.key, w.Code, w.Body, p.code)
		}
	}
	attempts, effects, _ := c.counts()
	if !maps.Equal(attempts, map[string]int{"a": 1, "b": 2}) || !maps.Equal(effects, map[string]int{"a": 1}) {
		t.Errorf("attempts %v, effects %v; want attempts a:1 b:2 (the replay runs nothing; both refused writes were attempts), effects a:1", attempts, effects)
	}
	logged, err := readRunLog(&log)
	if err != nil || !maps.Equal(logged, attempts) {
		t.Errorf("run log %v (%v), want the attempts %v", logged, err, attempts)
	}
}

func TestReadRunLog(t *testing.T) {
	log := "run \"a\"\nrun \"id with space\\nand newline\"\nrun \"a\"\nrun \"cut sh"
	r, err := readRunLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(r, map[string]int{"a": 2, "id with space\nand newline": 1}) {
		t.Errorf("%v", r)
	}
	for _, bad := range []string{"run a\n", "walk \"a\"\n", "run\n", "skip \"a\"\n"} {
		if _, err := readRunLog(strings.NewReader(bad)); err == nil {
			t.Errorf("readRunLog(%q): no error", bad)
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
	url := testkit.SharedPostgresURL()
	ctx := context.Background()
	suffix := fmt.Sprintf("%08x", rand.Uint32())
	keys, features := "runs_keys_"+suffix, "runs_features_"+suffix
	t.Cleanup(func() { dropPgTables(t, url, keys, features) })
	log := new(lockedBuffer)
	slowRuns, fastRuns := newRunCounter(log, 10*time.Second), newRunCounter(log, 0)
	cfg := service.Config{Store: url, KeyTable: keys, FeaturesTable: features, HandlerTimeout: time.Second, WrapFeatures: slowRuns.wrap}
	slow, err := service.New(ctx, cfg)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	defer slow.Close()
	cfg.WrapFeatures = fastRuns.wrap
	fast, err := service.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()

	if w := postTo(slow.Handler(), "k1", featureBody("a")); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("the run past its HandlerTimeout: %d %s, want 503 (rolled back, key released)", w.Code, w.Body)
	}
	if w := postTo(fast.Handler(), "k1", featureBody("a")); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry: %d %s, want 201, executed", w.Code, w.Body)
	}
	first, _, _ := slowRuns.counts()
	second, _, _ := fastRuns.counts()
	effects, err := pgWrites(ctx, url, features)
	if err != nil {
		t.Fatal(err)
	}
	if first["a"] != 1 || second["a"] != 1 || !maps.Equal(effects, map[string]int{"a": 1}) {
		t.Errorf("attempts %v and %v, effects %v; want one attempt in each service, one effect", first, second, effects)
	}
	logged, err := readRunLog(bytes.NewReader(log.Bytes()))
	if err != nil || logged["a"] != 2 {
		t.Errorf("run log of both services: %v (%v), want 2 attempts of a", logged, err)
	}
}

func dropPgTables(t *testing.T, url, keys, features string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("dropping %s, %s: %v", keys, features, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{features}.Sanitize()); err != nil {
		t.Errorf("dropping %s: %v", features, err)
	}
	if err := pgstore.Drop(ctx, conn, pgstore.Config{Table: keys}); err != nil {
		t.Error(err)
	}
}

// lockedBuffer is a run log several services write to.
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
