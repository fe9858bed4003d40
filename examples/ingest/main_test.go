package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/newest"
)

// lineWriter hands each line written to it to a channel.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		select {
		case w.lines <- l:
		default:
		}
	}
	return len(p), nil
}

var servingRE = regexp.MustCompile(`serving (http://\S+)`)

// start runs the service in process on a free port and returns its URL.
func start(t *testing.T, args ...string) string {
	t.Helper()
	return startWith(t, nil, args...)
}

// startWith is start with the feature store wrapped by wrap (nil: not
// wrapped), as a test needs it.
func startWith(t *testing.T, wrap func(service.FeatureStore) service.FeatureStore, args ...string) string {
	t.Helper()
	cfg, c := parseFlags(append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard)
	if cfg == nil {
		t.Fatalf("%q: exit %d", args, c)
	}
	cfg.service.WrapFeatures = wrap
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{make(chan string, 16)}
	code := make(chan int, 1)
	go func() { code <- serve(ctx, cfg, out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("run exited %d after cancel, want 0", c)
		}
	})
	select {
	case l := <-out.lines:
		m := servingRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("first line %q does not name the URL", l)
		}
		return m[1]
	case c := <-code:
		code <- c // for the cleanup
		t.Fatalf("run exited %d before serving", c)
	case <-time.After(10 * time.Second):
		t.Fatal("no URL printed within 10s")
	}
	return ""
}

// hookedFeatures wraps the service's feature store for a test: before
// each write it calls before with the run's features (nil: nothing), and
// it pauses for delay between the write and its commit (on PostgreSQL,
// inside the transaction), unless the request's context ends first.
type hookedFeatures struct {
	service.FeatureStore
	before func([]service.Feature)
	delay  time.Duration
}

func (h hookedFeatures) Upsert(ctx context.Context, hold *keystore.Hold, fs []service.Feature, answer func([]newest.Verdict) service.Answer) (service.Answer, error) {
	if h.before != nil {
		h.before(fs)
	}
	return h.FeatureStore.Upsert(ctx, hold, fs, func(v []newest.Verdict) service.Answer {
		if h.delay > 0 {
			t := time.NewTimer(h.delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		return answer(v)
	})
}

// hook returns a WrapFeatures that wraps the store in a hookedFeatures.
func hook(before func([]service.Feature), delay time.Duration) func(service.FeatureStore) service.FeatureStore {
	return func(fs service.FeatureStore) service.FeatureStore {
		return hookedFeatures{FeatureStore: fs, before: before, delay: delay}
	}
}

func do(t *testing.T, method, url, key, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/geo+json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const collection = `{"type":"FeatureCollection","features":[
 {"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"n":1}},
 {"type":"Feature","id":7,"geometry":{"type":"Point","coordinates":[2.35,48.85]},"properties":null}]}`

func TestIngestMemory(t *testing.T) {
	url := start(t)
	resp, body := do(t, http.MethodPost, url+"/features", "k1", collection)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	var stored struct{ Stored []string }
	if err := json.Unmarshal([]byte(body), &stored); err != nil || strings.Join(stored.Stored, ",") != "a,7" {
		t.Fatalf("body %s: want stored [a 7]", body)
	}
	again, body2 := do(t, http.MethodPost, url+"/features", "k1", collection)
	if again.StatusCode != http.StatusCreated || body2 != body || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s replayed=%q", again.StatusCode, body2, again.Header.Get("Idempotent-Replayed"))
	}
	if r, _ := do(t, http.MethodPost, url+"/features", "k1", strings.Replace(collection, "13.4", "13.5", 1)); r.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("key reused with another payload: %d, want 422", r.StatusCode)
	}
	if r, _ := do(t, http.MethodPost, url+"/features", "", collection); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("no key: %d, want 400", r.StatusCode)
	}
	if r, b := do(t, http.MethodPost, url+"/features", "k2", `{"type":"Feature","geometry":null,"properties":null}`); r.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("feature without id: %d %s, want 422", r.StatusCode, b)
	}
	if r, b := do(t, http.MethodGet, url+"/healthz", "", ""); r.StatusCode != http.StatusOK || !strings.Contains(b, "reachable") {
		t.Fatalf("healthz: %d %s", r.StatusCode, b)
	}
	r, f := do(t, http.MethodGet, url+"/features/7", "", "")
	if r.StatusCode != http.StatusOK || !strings.Contains(f, "2.35") {
		t.Fatalf("GET /features/7: %d %s", r.StatusCode, f)
	}
	if r, _ := do(t, http.MethodGet, url+"/features/nope", "", ""); r.StatusCode != http.StatusNotFound {
		t.Fatalf("GET of a missing feature: %d, want 404", r.StatusCode)
	}
	_, metrics := do(t, http.MethodGet, url+"/metrics", "", "")
	for _, want := range []string{
		`geoidem_requests_total{outcome="executed"} 2`, // the collection and the feature without id (422 is recorded)
		`geoidem_requests_total{outcome="replayed"} 1`,
		`geoidem_requests_total{outcome="mismatch"} 1`,
		`geoidem_requests_total{outcome="rejected"} 1`,
		`geoidem_request_duration_seconds_count{outcome="executed"} 2`,
		`geoidem_store_operation_seconds_count{op="claim",result="ok"} 4`, // the request without a key never reaches the store
		`geoidem_store_operation_seconds_count{op="complete",result="ok"} 2`,
		`geoidem_lease_takeovers_total 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// ingestBinary builds the command once per test run and returns its path.
func ingestBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "geoidem-ingest-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ingest")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// The command itself, as the README runs it: it prints its URL, serves, and
// exits 0 on SIGTERM.
func TestIngestCommandShutsDownOnSignal(t *testing.T) {
	cmd := exec.Command(ingestBinary(t), "-addr", "127.0.0.1:0")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("no output")
	}
	m := servingRE.FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first line %q does not name the URL", sc.Text())
	}
	if r, _ := do(t, http.MethodPost, m[1]+"/features", "k", collection); r.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d", r.StatusCode)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("still running 15s after SIGTERM")
	}
}

func TestIngestRejectsInvalidGeometry(t *testing.T) {
	url := start(t)
	bowtie := `{"type":"Feature","id":"b","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]},"properties":null}`
	resp, body := do(t, http.MethodPost, url+"/features", "bow", bowtie)
	if resp.StatusCode != http.StatusUnprocessableEntity || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(body, `"pointer":"/geometry/coordinates/0`) || !strings.Contains(body, "ring-self-intersection") {
		t.Fatalf("bow-tie polygon: %d %s", resp.StatusCode, body)
	}
	again, body2 := do(t, http.MethodPost, url+"/features", "bow", bowtie)
	// The validator's answer is not recorded: the retry is validated again
	// and gets the same 422.
	if again.StatusCode != http.StatusUnprocessableEntity || body2 != body || again.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry of the invalid delivery: %d replayed=%q; want the same 422, validated again", again.StatusCode, again.Header.Get("Idempotent-Replayed"))
	}
	if r, _ := do(t, http.MethodGet, url+"/features/b", "", ""); r.StatusCode != http.StatusNotFound {
		t.Fatalf("the invalid feature was stored: GET %d", r.StatusCode)
	}
	if r, b := do(t, http.MethodPost, url+"/features", "trunc", `{"type":"Feature",`); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("malformed JSON: %d %s, want 400", r.StatusCode, b)
	}
}

// writeDelayEnv, set to a duration, makes the test binary the ingest
// command with each feature write paused that long before it commits: a
// receiver a test can SIGKILL while its handler runs (see
// startPausedProcess). The hook lives in the test only; the command has
// none.
const writeDelayEnv = "GEOIDEM_INGEST_TEST_WRITE_DELAY"

func TestMain(m *testing.M) {
	if d := os.Getenv(writeDelayEnv); d != "" {
		os.Exit(runPaused(d, os.Args[1:]))
	}
	code := m.Run()
	for _, p := range []string{binPath, geoidemPath} {
		if p != "" {
			os.RemoveAll(filepath.Dir(p))
		}
	}
	os.Exit(code)
}

// runPaused is the test binary as the ingest command with its feature
// writes paused for delay (writeDelayEnv).
func runPaused(delay string, args []string) int {
	d, err := time.ParseDuration(delay)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", writeDelayEnv, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, code := parseFlags(args, os.Stderr)
	if cfg == nil {
		return code
	}
	cfg.service.WrapFeatures = hook(nil, d)
	return serve(ctx, cfg, os.Stdout, os.Stderr)
}
