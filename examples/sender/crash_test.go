package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/internal/faultproxy"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds examples/sender and examples/ingest once per test run.
func binaries(t *testing.T) (sender, ingest string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "geoidem-sender-crash-")
		if buildErr != nil {
			return
		}
		for _, pkg := range []string{".", "../ingest"} {
			name := filepath.Join(binDir, filepath.Base(filepath.Clean(pkg)))
			if pkg == "." {
				name = filepath.Join(binDir, "sender")
			}
			if out, err := exec.Command("go", "build", "-o", name, pkg).CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "sender"), filepath.Join(binDir, "ingest")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

const crashPgURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func envOr(env, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return def
}

// TestSenderCrash is the sender side of exactly-once. examples/ingest runs
// as a child process on each store, behind a fault proxy that loses
// acknowledgements (the receiver committed, the sender never heard) and
// resets connections. examples/sender, another child process, delivers
// features without observation_time and is SIGKILLed at random points of
// its journal, several times, and run again over the same input each time.
// In the end every event is stored, the handler executed exactly once per
// event (the service's outcome counters; its count of the features of the
// writes that took effect, geoidem_features_total, which a second run of
// an event would raise, as stale or stored again: exactly one per event;
// in PostgreSQL also the writes column of every row, incremented inside
// the handler's transaction, so an attempt rolled back is not a second
// run),
// the stored bytes are the ones first journaled (one
// observation_time per event, not per run), nothing is pending in the
// journal, and one more run is all replays.
func TestSenderCrash(t *testing.T) {
	senderBin, ingestBin := binaries(t)
	suffix := fmt.Sprintf("%08x", rand.Uint32())
	for _, tc := range []struct {
		name  string
		args  func(t *testing.T) []string
		check func(t *testing.T, n int) // store-specific proof
	}{
		{name: "memory", args: func(*testing.T) []string { return []string{"-store", "memory"} }},
		{name: "redis", args: func(t *testing.T) []string {
			prefix := "geoidem-i15-crash-" + suffix + ":"
			u := testkit.SharedURL()
			t.Cleanup(func() { dropRedisPrefix(t, u, prefix) })
			return []string{"-store", u, "-redis-prefix", prefix, "-redis-volatile"}
		}},
		{name: "postgres", args: func(t *testing.T) []string {
			keys, features := "sender_crash_keys_"+suffix, "sender_crash_features_"+suffix
			u := envOr("GEOIDEM_TEST_POSTGRES", crashPgURL)
			t.Cleanup(func() { dropPgTables(t, u, keys, features) })
			return []string{"-store", u, "-pg-key-table", keys, "-pg-features-table", features}
		}, check: func(t *testing.T, n int) {
			u := envOr("GEOIDEM_TEST_POSTGRES", crashPgURL)
			conn, err := pgx.Connect(context.Background(), u)
			if err != nil {
				t.Fatalf("PostgreSQL at %s: %v", u, err)
			}
			defer conn.Close(context.Background())
			var rows, minW, maxW int
			err = conn.QueryRow(context.Background(), "SELECT count(*), coalesce(min(writes), 0), coalesce(max(writes), 0) FROM "+
				pgx.Identifier{"sender_crash_features_" + suffix}.Sanitize()).Scan(&rows, &minW, &maxW)
			if err != nil {
				t.Fatal(err)
			}
			if rows != n || minW != 1 || maxW != 1 {
				t.Errorf("%d feature rows written between %d and %d times; want %d rows written exactly once", rows, minW, maxW, n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crashRun(t, senderBin, ingestBin, tc.args(t), tc.check)
		})
	}
}

// Shape of a crash run: events, kills, and the sender's flags.
const (
	crashEvents = 60
	crashKills  = 5
)

func crashRun(t *testing.T, senderBin, ingestBin string, storeArgs []string, check func(*testing.T, int)) {
	// A short lease: a claim whose request died with a killed sender (in
	// PostgreSQL, a claim that committed while its request was canceled) is
	// taken over within the sender's retry window instead of answering 409
	// for the default lease.
	base := startIngest(t, ingestBin, append([]string{"-lease", "1s"}, storeArgs...))
	target, _ := url.Parse(base)
	seed := rand.Uint64()
	t.Logf("seed %d (the proxy's faults and the kill points)", seed)
	proxy, err := faultproxy.New(target, faultproxy.Config{
		Seed: seed, LostAck: 0.25, Reset: 0.05, Inject503: 0.05,
		RetryAfterForm: faultproxy.RetryAfterSeconds,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	proxyURL, err := proxy.Start()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	var in bytes.Buffer
	ids := make([]string, crashEvents)
	for i := range ids {
		ids[i] = fmt.Sprintf("crash-%d-%08x", i, rand.Uint32())
		fmt.Fprintf(&in, `{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%d.5,%d.25]},"properties":{"n":%d}}`+"\n", ids[i], i%180, i%90, i)
	}
	input := filepath.Join(dir, "events.ndjson")
	journal := filepath.Join(dir, "sender.journal")
	dead := filepath.Join(dir, "dead.jsonl")
	if err := os.WriteFile(input, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-url", proxyURL + "/features", "-journal", journal, "-dead-letter", dead, "-concurrency", "4",
		"-base", "5ms", "-cap", "100ms", "-attempts", "60", "-attempt-timeout", "5s", "-deadline", "60s", "-max-retry-after", "100ms", input}

	// Kill the sender at random points of its run: once the proxy has seen
	// a random number of its requests. A run sends a request per event at
	// least (an event delivered before is replayed), so each kill lands
	// before the run could finish. (Not at a journal line: a done mark
	// made while a sync is in progress waits in memory for the next write,
	// a record's batch or Close, so a run whose events are all recorded
	// already may append its lines only as it ends.)
	rng := rand.New(rand.NewPCG(seed, 0))
	requests := func() int { return int(proxy.Stats().Requests) }
	for k := range crashKills {
		n := 1 + rng.IntN(crashEvents)
		if !runKilled(t, senderBin, args, requests, n) {
			t.Fatalf("kill %d: the sender finished before it sent %d requests", k+1, n)
		}
		t.Logf("kill %d after %d requests, at journal line %d", k+1, n, journalLines(journal))
	}

	out, code := runSender(t, senderBin, args)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("delivered           %d", crashEvents)) {
		t.Fatalf("the run after the kills: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(dead); len(data) > 0 {
		t.Errorf("dead letters after the final run:\n%s", data)
	}
	proxy.Pause()
	// One more run: every event was delivered, so every one is a replay.
	if out, code := runSender(t, senderBin, args); code != 0 || !strings.Contains(out, fmt.Sprintf("replayed          %d", crashEvents)) {
		t.Errorf("a run after everything was delivered: exit %d, want every event replayed\n%s", code, out)
	}
	st := proxy.Stats()
	t.Logf("proxy: %d requests, %d lost acknowledgements, %d resets, %d 503", st.Requests, st.LostAck, st.Reset, st.Inject503)
	if st.LostAck == 0 {
		t.Error("no acknowledgement was lost: the run proves nothing")
	}

	// The receiver: each event executed once, none refused as key reuse.
	m := metrics(t, base)
	t.Logf("receiver outcomes: %v", m)
	if m["executed"] != crashEvents || m["mismatch"] != 0 || m["lease_lost"] != 0 || m["invalid"] != 0 {
		t.Errorf("outcomes %v: want executed %d, and no mismatch, lease_lost or invalid", m, crashEvents)
	}
	if check != nil {
		check(t, crashEvents)
	} else if m["released"] != 0 { // memory features: a released run wrote nothing, so none may happen
		t.Errorf("%d handler runs released", m["released"])
	}
	checkRuns(t, base, ids)

	// The journal: nothing pending; every stored feature carries the
	// observation_time first journaled for it.
	j, err := client.OpenFileJournal(journal, client.FileJournalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if p, _ := j.Pending(context.Background()); len(p) != 0 {
		t.Errorf("%d entries still pending in the journal", len(p))
	}
	stamps := map[string]string{}
	for _, e := range j.Entries() {
		id, stamp := observation(t, e.Body)
		stamps[id] = stamp
	}
	for _, id := range ids {
		resp, err := http.Get(base + "/features/" + id)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("feature %s: %d %s", id, resp.StatusCode, body)
			continue
		}
		if _, stamp := observation(t, body); stamp != stamps[id] || stamp == "" {
			t.Errorf("feature %s stored with observation_time %q, journaled with %q", id, stamp, stamps[id])
		}
	}
}

// checkRuns reads the receiver's count of the features its committed
// writes took (geoidem_features_total, by what the newest rule did with
// them): every event is stored (checked apart), so a total of one per
// event means each event's handler took effect exactly once. A second run
// of an event (its record lost, a retry run again) would count again: as
// stale (the same observation is stored) or stored.
func checkRuns(t *testing.T, base string, ids []string) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	total, results := 0, map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := featuresRE.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[2])
			results[m[1]] = n
			total += n
		}
	}
	if total != len(ids) || results["stored"] != len(ids) {
		t.Errorf("the handler's writes took %v features for %d events, want %d stored: an event ran more than once", results, len(ids), len(ids))
	}
	t.Logf("%d features written for %d events: %v", total, len(ids), results)
}

var featuresRE = regexp.MustCompile(`^geoidem_features_total\{result="([a-z]+)"\} (\d+)`)

// observation returns a feature's id and observation_time.
func observation(t *testing.T, body []byte) (id, stamp string) {
	t.Helper()
	var f struct {
		ID         string `json:"id"`
		Properties struct {
			ObservationTime string `json:"observation_time"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return f.ID, f.Properties.ObservationTime
}

// journalLines counts the journal's lines (0 if it does not exist).
func journalLines(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte("\n"))
}

// runKilled starts the sender and SIGKILLs it once progress has grown by n
// since the start. It reports false if the sender exited on its own first.
func runKilled(t *testing.T, bin string, args []string, progress func() int, n int) bool {
	t.Helper()
	at := progress() + n
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	limit := time.NewTimer(30 * time.Second)
	defer limit.Stop()
	for {
		select {
		case <-exited:
			return false
		case <-limit.C:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("no progress to %d in 30s (at %d)", at, progress())
		case <-tick.C:
		}
		if progress() >= at {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			err := <-exited
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				return false
			}
			ws, ok := ee.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
		}
	}
}

// runSender runs the sender to the end and returns its output and exit code.
func runSender(t *testing.T, bin string, args []string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("sender: %v\n%s", err, out)
	return "", -1
}

var servingRE = regexp.MustCompile(`serving (http://\S+)`)

// startIngest runs examples/ingest on a free loopback port until the test
// ends, and returns its base URL.
func startIngest(t *testing.T, bin string, storeArgs []string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, storeArgs...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatal("ingest exited before serving")
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("ingest did not serve within 30s")
	}
	return ""
}

var metricRE = regexp.MustCompile(`^geoidem_requests_total\{outcome="([a-z_]+)"\} (\d+)`)

// metrics reads the service's outcome counters.
func metrics(t *testing.T, base string) map[string]int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := metricRE.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	if len(out) == 0 {
		t.Fatal("no geoidem_requests_total series in /metrics")
	}
	return out
}

func dropRedisPrefix(t *testing.T, u, prefix string) {
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Error(err)
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := testkit.DeletePrefix(context.Background(), c, prefix); err != nil {
		t.Errorf("Redis at %s: %v", u, err)
	}
}

func dropPgTables(t *testing.T, u, keys, features string) {
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Errorf("PostgreSQL at %s: %v", u, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{features}.Sanitize()); err != nil {
		t.Errorf("dropping %s: %v", features, err)
	}
	if err := pgstore.Drop(context.Background(), conn, pgstore.Config{Table: keys}); err != nil {
		t.Error(err)
	}
}
