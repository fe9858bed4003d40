// Package aiohttp_test runs the aiohttp receiver (receiver.py, Debian's
// python3-aiohttp) behind `geoidem proxy`, with the paired sender
// (examples/sender) in front.
package aiohttp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// build builds a command of this repository into dir.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// start starts cmd and returns the first group of the first line of its
// standard output that re matches; SIGTERM ends it with the test.
func start(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp) string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
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
	found := make(chan string, 1)
	go func() {
		defer close(done)
		defer cmd.Wait() //nolint:errcheck
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-done:
		t.Fatalf("%q ended without printing its address", cmd.Args)
	case <-time.After(time.Minute):
		t.Fatalf("%q printed no address within a minute", cmd.Args)
	}
	return ""
}

func runs(t *testing.T, receiver string) (int, map[string]int) {
	t.Helper()
	resp, err := http.Get(receiver + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Runs int            `json:"runs"`
		Keys map[string]int `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r.Runs, r.Keys
}

// TestSenderTwiceThroughProxy: 200 features sent by examples/sender through
// `geoidem proxy` to an aiohttp receiver that does no idempotency of its
// own, then sent again (a re-run with the same journal, and one from
// another host, with a journal of its own): the receiver runs exactly 200
// times, once per feature.
func TestSenderTwiceThroughProxy(t *testing.T) {
	dir := t.TempDir()
	geoidem := build(t, dir, "github.com/geoidem/geoidem/cmd/geoidem")
	sender := build(t, dir, "github.com/geoidem/geoidem/examples/sender")
	receiver := start(t, exec.Command("/usr/bin/python3", "receiver.py", "--port", "0"), regexp.MustCompile(`^receiver: serving (http://\S+)`))
	proxy := start(t, exec.Command(geoidem, "proxy", "-addr", "127.0.0.1:0", "-upstream", receiver), regexp.MustCompile(`^geoidem proxy: serving (http://[^,\s]+)`))

	var input strings.Builder
	for i := range 200 {
		fmt.Fprintf(&input, `{"type":"Feature","id":"f%d","geometry":{"type":"Point","coordinates":[%d.5,52.5]},"properties":{"observation_time":"2026-01-01T00:00:00Z"}}`+"\n", i, i%180)
	}
	features := filepath.Join(dir, "features.ndjson")
	if err := os.WriteFile(features, []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, journal := range []string{"a.journal", "a.journal", "b.journal"} {
		cmd := exec.Command(sender, "-url", proxy+"/features", "-concurrency", "6", "-journal", filepath.Join(dir, journal), "-progress", "0", features)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sender run %d: %v\n%s", i+1, err, out)
		}
		t.Logf("sender run %d:\n%s", i+1, out)
		n, keys := runs(t, receiver)
		if n != 200 || len(keys) != 200 {
			t.Fatalf("after sender run %d the receiver ran %d times under %d keys, want 200 under 200", i+1, n, len(keys))
		}
	}
}
