package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

var geoidemBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "geoidem-cmd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	geoidemBin = filepath.Join(dir, "geoidem")
	if out, err := exec.Command("go", "build", "-o", geoidemBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// geoidem runs the built command with args and returns its exit code and
// output.
func geoidem(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, geoidemBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatalf("geoidem %q: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// feature is the receiving handler: it answers 201 naming the execution,
// with a session cookie (so that ReplayCarriesNoSetCookie has one to keep
// out of the replay, and can pass rather than be inconclusive).
type feature struct{ runs atomic.Int64 }

func (h *feature) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.runs.Add(1)
	time.Sleep(10 * time.Millisecond)
	w.Header().Set("Content-Type", "application/json")
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"execution":%d}`, n)
}

// closedRing rejects a Polygon whose first ring is not closed, the suite's
// default invalid payload.
var closedRing = middleware.ValidatorFunc(func(_ *http.Request, body []byte) error {
	var f struct {
		Geometry struct {
			Type        string          `json:"type"`
			Coordinates json.RawMessage `json:"coordinates"`
		} `json:"geometry"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return err
	}
	if f.Geometry.Type == "Polygon" {
		var rings [][][]float64
		if err := json.Unmarshal(f.Geometry.Coordinates, &rings); err != nil {
			return err
		}
		for _, ring := range rings {
			if len(ring) < 4 || !slices.Equal(ring[0], ring[len(ring)-1]) {
				return fmt.Errorf("/geometry/coordinates: a ring is not closed")
			}
		}
	}
	return nil
})

func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func wrap(t *testing.T, store keystore.Store, h http.Handler) http.Handler {
	idem, err := middleware.New(store, middleware.Config{Validator: closedRing})
	if err != nil {
		t.Fatal(err)
	}
	return idem.Handler(h)
}

// forgetful keeps nothing: behind it every request executes.
type forgetful struct{}

func (s *forgetful) Claim(_ context.Context, _ string, a keystore.ClaimArgs) (keystore.Claim, error) {
	return keystore.Claim{Acquired: true, State: keystore.InFlight, Fingerprint: a.Fingerprint}, nil
}
func (s *forgetful) Extend(context.Context, string, keystore.Token, time.Duration) (time.Duration, error) {
	return 0, nil
}
func (s *forgetful) Complete(context.Context, string, keystore.Token, []byte, time.Duration) error {
	return nil
}
func (s *forgetful) Release(context.Context, string, keystore.Token) error { return nil }

// records5xx records its first answer to every key, a 503, and replays it:
// the fault of a receiver that stores a transient failure as the outcome.
type records5xx struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (h *records5xx) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"type":"https://geoidem.dev/problems/missing-key","title":"Missing key","status":400}`)
		return
	}
	h.mu.Lock()
	replay := h.seen[key]
	h.seen[key] = true
	h.mu.Unlock()
	if replay {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, `{"type":"about:blank","title":"Service Unavailable","status":503}`)
}

var ruleLine = regexp.MustCompile(`(?m)^(pass|FAIL|not applicable|inconclusive)\s+(\w+)`)

// outcomes maps each rule to its outcome in the command's text output.
func outcomes(out string) map[string]string {
	m := map[string]string{}
	for _, l := range ruleLine.FindAllStringSubmatch(out, -1) {
		m[l[2]] = l[1]
	}
	return m
}

// TestGeoidemContract runs the command against a correct receiver (exit 0,
// every rule passes) and against broken ones (exit 1, the rules they break
// named FAIL, with the answers that broke them).
func TestGeoidemContract(t *testing.T) {
	t.Run("correct", func(t *testing.T) {
		url := serve(t, wrap(t, new(memstore.Store), new(feature)))
		code, out, errs := geoidem(t, "", "contract", "-url", url, "-path", "/features")
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s%s", code, out, errs)
		}
		got := outcomes(out)
		if len(got) != 9 {
			t.Fatalf("%d rule lines, want 9\n%s", len(got), out)
		}
		for name, o := range got {
			if o != "pass" {
				t.Errorf("%s: %s", name, o)
			}
		}
		if !strings.Contains(out, "9 rules against "+url+"/features: 9 pass, 0 fail, 0 not applicable") {
			t.Errorf("no summary line\n%s", out)
		}
	})

	noMarker := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(stripReplayed{w}, r)
		})
	}
	broken := []struct {
		name    string
		handler func(t *testing.T) http.Handler
		fail    []string
	}{
		{"answers-201-to-everything", func(t *testing.T) http.Handler { return new(feature) },
			[]string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422", "InvalidGeometryIs422AndNotRetried", "MissingKeyIs400", "MalformedKeyIs400", "ReplayCarriesNoSetCookie"}},
		{"no-replay-marker", func(t *testing.T) http.Handler { return noMarker(wrap(t, new(memstore.Store), new(feature))) },
			[]string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422", "ReplayCarriesNoSetCookie"}},
		{"second-execution", func(t *testing.T) http.Handler { return wrap(t, new(forgetful), new(feature)) },
			[]string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422", "ReplayCarriesNoSetCookie"}},
		{"5xx-recorded", func(t *testing.T) http.Handler { return &records5xx{seen: map[string]bool{}} },
			[]string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422", "InvalidGeometryIs422AndNotRetried", "RetryAfterIsHonoured", "MalformedKeyIs400", "MissingKeyIs400", "ReplayCarriesNoSetCookie", "BlockedKeyIsDelivered"}},
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := serve(t, b.handler(t))
			code, out, errs := geoidem(t, "", "contract", "-url", url)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
			}
			var failed []string
			for name, o := range outcomes(out) {
				if o == "FAIL" {
					failed = append(failed, name)
				}
			}
			slices.Sort(failed)
			want := slices.Sorted(slices.Values(b.fail))
			if !slices.Equal(failed, want) {
				t.Errorf("failed %q, want %q\n%s", failed, want, out)
			}
			if !strings.Contains(out, "RULE BROKEN: ") {
				t.Errorf("no message names a broken rule\n%s", out)
			}
		})
	}
}

type stripReplayed struct{ http.ResponseWriter }

func (w stripReplayed) WriteHeader(code int) {
	w.Header().Del("Idempotent-Replayed")
	w.ResponseWriter.WriteHeader(code)
}

func (w stripReplayed) Write(b []byte) (int, error) {
	w.Header().Del("Idempotent-Replayed")
	return w.ResponseWriter.Write(b)
}

func TestGeoidemContractJSON(t *testing.T) {
	url := serve(t, wrap(t, new(memstore.Store), new(feature)))
	code, out, errs := geoidem(t, "", "contract", "-url", url, "-json")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errs)
	}
	var rep struct {
		OK     bool `json:"ok"`
		Passed int  `json:"passed"`
		Rules  []struct {
			Name    string `json:"name"`
			Outcome string `json:"outcome"`
		} `json:"rules"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !rep.OK || rep.Passed != 9 || len(rep.Rules) != 9 || rep.Rules[0].Outcome != "pass" {
		t.Fatalf("report %+v", rep)
	}
	// The report's fields, in this order: what scripts read.
	var names []string
	dec := json.NewDecoder(strings.NewReader(out))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"url", "ok", "endpoint", "rules", "passed", "failed", "not_applicable", "inconclusive"}; !slices.Equal(names, want) {
		t.Errorf("the report's fields are %q, want %q", names, want)
	}
}

func TestGeoidemContractUsage(t *testing.T) {
	for _, args := range [][]string{
		{"contract"},
		{"contract", "-url", "http://127.0.0.1:1"},
		{"contract", "-url", "ftp://x"},
		{"contract", "-url", "http://127.0.0.1:1", "-body", "/nonexistent"},
		{"nonsense"},
		{},
	} {
		if code, out, errs := geoidem(t, "", args...); code != 2 {
			t.Errorf("geoidem %q: exit %d, want 2\n%s%s", args, code, out, errs)
		}
	}
}

// -body: a template with {{n}}; without one, a usage error.
func TestGeoidemContractBody(t *testing.T) {
	url := serve(t, wrap(t, new(memstore.Store), new(feature)))
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"type":"Feature","id":"f-{{n}}","geometry":null,"properties":null}`), 0o600)
	os.WriteFile(bad, []byte(`{"type":"Feature","id":"f","geometry":null,"properties":null}`), 0o600)
	if code, out, errs := geoidem(t, "", "contract", "-url", url, "-body", good); code != 0 {
		t.Errorf("-body with {{n}}: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := geoidem(t, "", "contract", "-url", url, "-body", bad); code != 2 || !strings.Contains(errs, "{{n}}") {
		t.Errorf("-body without {{n}}: exit %d, %s", code, errs)
	}
}
