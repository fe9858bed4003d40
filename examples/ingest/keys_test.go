package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// keysOut runs `geoidem keys` and returns its exit code and output.
func keysOut(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	return runGeoidem(t, stdin, append([]string{"keys"}, args...)...)
}

// until runs `geoidem keys get` until its output contains want, for at
// most a minute.
func until(t *testing.T, want string, args ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, out := keysOut(t, "", append([]string{"get"}, args...)...)
		if strings.Contains(out, want) {
			return
		}

		if time.Now().After(deadline) {
			t.Fatalf("geoidem keys get %q never showed %q; last:\n%s", args, want, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startPausedProcess starts the ingest command, each feature write paused
// for delay before it commits, as a process (this test binary: see
// writeDelayEnv), and returns its URL.
func startPausedProcess(t *testing.T, delay time.Duration, args ...string) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), writeDelayEnv+"="+delay.String())
	return startCommand(t, cmd)
}

// startCommand starts cmd, an ingest command, and returns its URL.
func startCommand(t *testing.T, cmd *exec.Cmd) (*exec.Cmd, string) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("the ingest process printed nothing")
	}
	m := servingRE.FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first line %q does not name the URL", sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return cmd, m[1]
}

// TestGeoidemKeysReleasesAKilledReceiversKey: a receiver is SIGKILLed while
// its handler runs, leaving the key in flight. `geoidem keys get` shows it
// in flight, then its lease run out; `geoidem keys release` frees it; and
// the sender's retry, to a restarted receiver, runs the handler once and
// is answered fresh, then replayed.
func TestGeoidemKeysReleasesAKilledReceiversKey(t *testing.T) {
	geoidemBinary(t) // built before any receiver starts: the build may take long on a loaded machine
	suffix := fmt.Sprintf("%x", rand.Uint64())
	keyTable, featuresTable := "killed_keys_"+suffix, "killed_features_"+suffix
	t.Cleanup(func() { dropTables(t, keyTable, featuresTable) })
	prefix := "geoidem-killed-" + suffix + ":"
	dropRedisPrefix(t, prefix)
	for _, st := range []struct {
		name       string
		storeArgs  []string // for the receiver
		storeFlags []string // for geoidem keys
	}{
		{"redis", []string{"-store", testkit.SharedURL(), "-redis-prefix", prefix, "-redis-volatile"},
			[]string{"-store", testkit.SharedURL(), "-redis-prefix", prefix}},
		{"postgres", []string{"-store", postgresURL(), "-pg-key-table", keyTable, "-pg-features-table", featuresTable},
			[]string{"-store", postgresURL(), "-pg-key-table", keyTable}},
	} {
		t.Run(st.name, func(t *testing.T) {
			key := "killed-" + st.name
			body := `{"type":"Feature","id":"` + key + `","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`
			get := append(append([]string(nil), st.storeFlags...), key)

			cmd, url := startPausedProcess(t, 10*time.Minute, append([]string{"-lease", "2s"}, st.storeArgs...)...)
			sent := make(chan error, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/geo+json")
				req.Header.Set("Idempotency-Key", key)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					err = fmt.Errorf("answered %d before the kill", resp.StatusCode)
				}
				sent <- err
			}()
			until(t, "state: in flight", get...)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if err := <-sent; err == nil || strings.Contains(err.Error(), "answered") {
				t.Fatalf("the delivery to the killed receiver: %v, want a broken connection", err)
			}

			until(t, "lease ran out", get...)
			code, out := keysOut(t, "", append([]string{"release"}, get...)...)
			if code != 0 || !strings.Contains(out, "released") || !strings.Contains(out, "its lease had run out") {
				t.Fatalf("geoidem keys release: exit %d\n%s", code, out)
			}
			if _, out := keysOut(t, "", append([]string{"get"}, get...)...); !strings.Contains(out, "absent") {
				t.Fatalf("after the release, get says\n%s", out)
			}

			// The sender's retry reaches a restarted receiver: it runs once.
			url = start(t, st.storeArgs...)
			runs := executions(t, url)
			before := runs()
			resp, _ := do(t, http.MethodPost, url+"/features", key, body)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("the retry after the release: %d replayed=%q, want a fresh 201", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
			}
			again, _ := do(t, http.MethodPost, url+"/features", key, body)
			if again.StatusCode != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("the next retry: %d replayed=%q, want the replay", again.StatusCode, again.Header.Get("Idempotent-Replayed"))
			}
			if n := runs() - before; n != 1 {
				t.Fatalf("the handler ran %d times for the retries, want 1", n)
			}
			code, out = keysOut(t, "", append([]string{"get"}, get...)...)
			if code != 0 || !strings.Contains(out, "completed: status 201") {
				t.Fatalf("get after the retry: exit %d\n%s", code, out)
			}
		})
	}
}

// TestGeoidemKeysMemoryThroughAdminListener: the memory store's keys, read
// and forgotten through the service's loopback admin listener; the public
// listener does not serve it, and a public -admin-addr is refused.
func TestGeoidemKeysMemoryThroughAdminListener(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{make(chan string, 16)}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, out, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("run exited %d after cancel, want 0", c)
		}
	})
	var url, admin string
	for url == "" || admin == "" {
		select {
		case l := <-out.lines:
			if m := servingRE.FindStringSubmatch(l); m != nil {
				url = m[1]
			}
			if a, ok := strings.CutPrefix(l, "ingest: admin on "); ok {
				admin = strings.Fields(a)[0]
			}
		case c := <-code:
			t.Fatalf("run exited %d", c)
		case <-time.After(10 * time.Second):
			t.Fatalf("no URL and admin URL printed within 10s (got %q, %q)", url, admin)
		}
	}
	if r, _ := do(t, http.MethodPost, url+"/features", "m1", collection); r.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d", r.StatusCode)
	}
	c, o := keysOut(t, "", "get", "-store", admin, "m1")
	if c != 0 || !strings.Contains(o, "completed: status 201") {
		t.Fatalf("keys get through the admin listener: exit %d\n%s", c, o)
	}
	c, o = keysOut(t, "", "stats", "-store", admin)
	if c != 0 || !strings.Contains(o, "completed: 1") {
		t.Fatalf("keys stats: exit %d\n%s", c, o)
	}
	c, o = keysOut(t, "", "forget", "-store", admin, "-yes", "m1")
	if c != 0 || !strings.Contains(o, "forgot") {
		t.Fatalf("keys forget: exit %d\n%s", c, o)
	}
	if r, _ := do(t, http.MethodPost, url+"/features", "m1", collection); r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("POST after forget: %d replayed=%q, want it run again", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	// Not on the public listener.
	if c, o := keysOut(t, "", "stats", "-store", url); c != 2 {
		t.Fatalf("keys stats against the public listener: exit %d, want 2\n%s", c, o)
	}
	// A public admin address is refused before anything listens.
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if c := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-admin-addr", addr}, io.Discard, io.Discard); c != 2 {
			t.Errorf("-admin-addr %s: exit %d, want 2", addr, c)
		}
	}
}
