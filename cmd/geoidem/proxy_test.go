package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// python is Debian's interpreter, with python3-aiohttp (scripts/services
// installs it).
const python = "/usr/bin/python3"

// receiverScript is the aiohttp receiver, with no idempotency of its own.
var receiverScript = filepath.Join("..", "..", "examples", "aiohttp", "receiver.py")

// started starts cmd, waits for the first line of its standard output that
// matches re, and returns the line's first group; the process is ended with
// SIGTERM (then killed) when the test ends. Its standard error goes to the
// test's log.
func started(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp) string {
	t.Helper()
	return startedAll(t, cmd, re)[0]
}

// startedAll is started for several lines: it waits until each of res has
// matched a line, in any order, and returns their first groups in the
// order of res.
func startedAll(t *testing.T, cmd *exec.Cmd, res ...*regexp.Regexp) []string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testLog{t}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines, read := make(chan string), make(chan struct{})
	defer close(read) // the lines after these are read and dropped
	go func() {
		defer close(done)
		defer cmd.Wait() //nolint:errcheck // its exit is the test's end
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-read:
			}
		}
		close(lines)
	}()
	got, left := make([]string, len(res)), len(res)
	timeout := time.After(time.Minute)
	for left > 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("%s %q ended without printing its addresses", cmd.Path, cmd.Args)
			}
			for i, re := range res {
				if m := re.FindStringSubmatch(line); m != nil && got[i] == "" {
					got[i] = m[1]
					left--
				}
			}
		case <-timeout:
			t.Fatalf("%s %q printed no address within a minute", cmd.Path, cmd.Args)
		}
	}
	return got
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var (
	receiverLine = regexp.MustCompile(`^receiver: serving (http://\S+)`)
	proxyLine    = regexp.MustCompile(`^geoidem proxy: serving (http://[^,\s]+)`)
	adminLine    = regexp.MustCompile(`^geoidem proxy: admin on (http://\S+)`)
)

// startReceiver starts the aiohttp receiver with args and returns its URL.
func startReceiver(t *testing.T, args ...string) string {
	t.Helper()
	return started(t, exec.Command(python, append([]string{receiverScript, "--port", "0"}, args...)...), receiverLine) // a later --port wins
}

// startProxy starts `geoidem proxy` in front of upstream and returns its URL.
func startProxy(t *testing.T, upstream string, args ...string) string {
	t.Helper()
	return started(t, proxyCommand(upstream, args...), proxyLine)
}

// proxyCommand is the command of `geoidem proxy` in front of upstream, on
// a port of its choosing.
func proxyCommand(upstream string, args ...string) *exec.Cmd {
	return exec.Command(geoidemBin, append([]string{"proxy", "-addr", "127.0.0.1:0", "-upstream", upstream}, args...)...)
}

// receiverRuns is how many times the receiver at url ran, in all and by key.
func receiverRuns(t *testing.T, url string) (int, map[string]int) {
	t.Helper()
	resp, err := http.Get(url + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var runs struct {
		Runs int            `json:"runs"`
		Keys map[string]int `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&runs); err != nil {
		t.Fatal(err)
	}
	return runs.Runs, runs.Keys
}

// deliver POSTs body under key and returns the answer.
func deliver(t *testing.T, url, key, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(body))
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

const pointFeature = `{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`

// TestProxyContractAiohttp: an aiohttp receiver that does no idempotency of
// its own, behind `geoidem proxy`, passes every rule of `geoidem contract`,
// none failed, none inconclusive (the summary names inconclusive rules
// only when there are some).
func TestProxyContractAiohttp(t *testing.T) {
	upstream := startReceiver(t)
	url := startProxy(t, upstream)
	code, out, errs := geoidem(t, "", "contract", "-url", url+"/features")
	if code != 0 {
		t.Fatalf("geoidem contract: exit %d, want 0\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "9 pass, 0 fail, 0 not applicable\n") {
		t.Errorf("not every rule passed:\n%s", out)
	}
}

// TestProxyInvalidGeometryNeverReachesUpstream: the proxy validates before
// forwarding: an invalid geometry is answered 422 by the proxy, every time,
// and the receiver never runs; a valid one runs once and is replayed.
func TestProxyInvalidGeometryNeverReachesUpstream(t *testing.T) {
	upstream := startReceiver(t)
	url := startProxy(t, upstream)
	invalid := `{"type":"Feature","id":"bad","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1]]]},"properties":null}`
	for i := range 2 {
		resp, body := deliver(t, url, "bad-1", invalid)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "invalid-geojson") {
			t.Errorf("invalid polygon, attempt %d: %d %s, want 422 invalid-geojson", i+1, resp.StatusCode, body)
		}
	}
	if runs, _ := receiverRuns(t, upstream); runs != 0 {
		t.Fatalf("the receiver ran %d times for an invalid geometry, want 0", runs)
	}
	for i := range 2 {
		resp, body := deliver(t, url, "good-1", pointFeature)
		if resp.StatusCode != http.StatusCreated || (resp.Header.Get("Idempotent-Replayed") == "true") != (i == 1) {
			t.Errorf("valid point, attempt %d: %d replayed=%q %s", i+1, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), body)
		}
		if i == 1 && resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("the replay carries the receiver's Set-Cookie %q", resp.Header.Get("Set-Cookie"))
		}
	}
	if runs, keys := receiverRuns(t, upstream); runs != 1 || keys["good-1"] != 1 {
		t.Errorf("the receiver ran %d times (%v), want once, under the forwarded key good-1", runs, keys)
	}
}

// TestContractOwnIdempotencyAiohttp: an aiohttp receiver that keeps the
// contract by itself, as a team in Python writes it (keys read bare, its
// own plain JSON 400 and 422, no problem documents), passes `geoidem
// contract` with no failure; it validates no geometry, so that rule is not
// applicable.
func TestContractOwnIdempotencyAiohttp(t *testing.T) {
	url := started(t, exec.Command(python, filepath.Join("testdata", "own_idempotency.py")), receiverLine)
	code, out, errs := geoidem(t, "", "contract", "-url", url+"/features", "-no-validator")
	if code != 0 || !strings.Contains(out, "8 pass, 0 fail, 1 not applicable\n") {
		t.Fatalf("geoidem contract: exit %d, want 0 and every rule but the validator's passed\n%s%s", code, out, errs)
	}
}
