package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// TestMain lets the test binary serve as the -kill-receiver child: the
// harness re-executes os.Executable(), which under go test is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "-serve-receiver" || os.Args[1] == "-run-sender") {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	// Under -race a process sleeps a second before it exits (the race
	// runtime's atexit_sleep_ms): every child stopped, restarted or closed
	// would cost one. The children inherit this.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// table parses the printed table into row name -> value.
func table(t *testing.T, out string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "  ")
		if i < 0 {
			continue
		}
		rows[line[:i]] = strings.TrimSpace(line[i:])
	}
	return rows
}

// count returns the leading integer of a row's value.
func count(t *testing.T, rows map[string]string, name string) int {
	t.Helper()
	v, ok := rows[name]
	if !ok {
		t.Fatalf("the table has no row %q", name)
	}
	f := strings.Fields(v)
	n, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatalf("row %q = %q: %v", name, v, err)
	}
	return n
}

// proxyFaults returns the sum of the proxy's injected faults.
func proxyFaults(t *testing.T, rows map[string]string) int {
	t.Helper()
	sum := 0
	for _, f := range strings.Split(rows["proxy faults"], ",") {
		n, err := strconv.Atoi(strings.Fields(f)[0])
		if err != nil {
			t.Fatalf("proxy faults %q: %v", rows["proxy faults"], err)
		}
		if n == 0 {
			t.Errorf("proxy fault %q never injected", f)
		}
		sum += n
	}
	return sum
}

// runChaos runs the command and checks what every run must show: exit 0,
// no event run twice (by the receiver's run count), nothing written twice,
// nothing lost, every stored feature counted as one run that took effect,
// faults actually injected, and the one receiver redeployed before the
// check on a store that outlives it.
func runChaos(t *testing.T, args ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	t.Logf("chaos %s\n%s", strings.Join(args, " "), stdout.String())
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr.String())
	}
	rows := table(t, stdout.String())
	if n := count(t, rows, "events run twice"); n != 0 {
		t.Errorf("%d events run twice", n)
	}
	if n := count(t, rows, "features written twice"); n != 0 {
		t.Errorf("%d features written twice", n)
	}
	stored, effects, attempts := count(t, rows, "features stored"), count(t, rows, "runs that took effect"), count(t, rows, "runs reaching the write")
	if effects != stored || attempts < effects {
		t.Errorf("%d features stored, %d runs took effect, %d reached the write: want one effect per stored feature, and no fewer attempts",
			stored, effects, attempts)
	}
	if n := count(t, rows, "events lost"); n != 0 {
		t.Errorf("%d events lost", n)
	}
	if proxyFaults(t, rows) == 0 {
		t.Error("the proxy injected no faults")
	}
	// One receiver on a store that outlives it is redeployed before the
	// check; the memory store is not (it keeps nothing across a restart).
	if _, ok := rows["receiver restarted before the check"]; ok {
		want := 1
		if strings.HasPrefix(rows["store"], "memory") {
			want = 0
		}
		if n := count(t, rows, "receiver restarted before the check"); n != want {
			t.Errorf("receiver restarted %d times before the check, want %d", n, want)
		}
	} else if !strings.Contains(rows["store"], "receiver processes") {
		t.Error("the table has no row \"receiver restarted before the check\"")
	}
	if count(t, rows, "replays") == 0 || count(t, rows, "422s") == 0 {
		t.Error("no replays or no 422s: the duplicate and invalid paths went unexercised")
	}
	if count(t, rows, "features stored") == 0 {
		t.Error("nothing stored")
	}
	return rows
}

func TestMemory(t *testing.T) {
	t.Parallel()
	runChaos(t, "-events", "120")
}

func TestRedisStoreFaults(t *testing.T) {
	t.Parallel()
	rows := runChaos(t, "-store", testkit.SharedURL(), "-store-faults", "-events", "150")
	if n := count(t, rows, "store cuts"); n != 2 {
		t.Errorf("%d store cuts, want 2", n)
	}
	if n := count(t, rows, "store 503s (fail closed)"); n == 0 {
		t.Error("no 503 from the middleware while Redis was cut")
	}
}

func TestPostgresStoreFaults(t *testing.T) {
	t.Parallel()
	rows := runChaos(t, "-store", testkit.SharedPostgresURL(), "-store-faults", "-events", "150")
	if n := count(t, rows, "store cuts"); n != 2 {
		t.Errorf("%d store cuts, want 2", n)
	}
	if n := count(t, rows, "pg_terminate_backend"); n != 3 {
		t.Errorf("%d pg_terminate_backend rounds, want 3", n)
	}
	if n := count(t, rows, "store 503s (fail closed)"); n == 0 {
		t.Error("no 503 from the middleware while PostgreSQL was cut")
	}
}

func TestPostgresKillReceiver(t *testing.T) {
	t.Parallel()
	rows := runChaos(t, "-store", testkit.SharedPostgresURL(), "-kill-receiver", "3", "-events", "150")
	if n := count(t, rows, "receiver kills"); n != 3 {
		t.Errorf("%d receiver kills, want 3", n)
	}
}

// TestPathSpellingsRun sends every attempt of a delivery, and the re-send,
// to another spelling of /features (/%66eatures, /feature%73, …): one
// resource, one key, one run. Before the middleware normalised the path
// (591ed10), this run had 38 of 150 events run twice.
func TestPathSpellingsRun(t *testing.T) {
	t.Parallel()
	runChaos(t, "-path-spellings", "-events", "150")
}

// TestKillSender kills the journaled senders with SIGKILL three times in
// the first pass and re-runs them: nothing is written twice, nothing is
// lost, nothing stays pending in the journal, on every store.
func TestKillSender(t *testing.T) {
	for name, store := range map[string]string{
		"memory":   "memory",
		"redis":    testkit.SharedURL(),
		"postgres": testkit.SharedPostgresURL(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rows := runChaos(t, "-store", store, "-kill-sender", "3", "-events", "100")
			if n := count(t, rows, "sender kills"); n != 3 {
				t.Errorf("%d sender kills landed, want 3", n)
			}
			if n := count(t, rows, "journal pending"); n != 0 {
				t.Errorf("%d journal entries pending", n)
			}
		})
	}
}

// TestNaiveReceiverFails shows that the harness can fail: a receiver
// without the middleware applies retries after lost acknowledgements
// again, and the harness must see features written twice and exit 1.
func TestNaiveReceiverFails(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	o := options{store: "memory", senders: 4, events: 80, attempts: 4, seed: 1, naive: true}
	code := chaos(context.Background(), o, &stdout, &stderr)
	t.Logf("%s", stdout.String())
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, stderr.String())
	}
	rows := table(t, stdout.String())
	if n := count(t, rows, "features written twice"); n == 0 {
		t.Error("the naive receiver wrote nothing twice, or the harness did not notice")
	}
	if n := count(t, rows, "events run twice"); n == 0 {
		t.Error("the naive receiver ran nothing twice, or the run count did not notice")
	}
	if !strings.HasPrefix(rows["result"], "FAIL") {
		t.Errorf("result %q, want FAIL", rows["result"])
	}
}

// TestForgetfulReceiverFails shows that the harness sees a lost effect: a
// receiver that acknowledges an event and then loses its record and its
// effect together runs it again when the event is re-sent, and it is
// stored in the end. Only a check of every acknowledged event's effect
// before any re-send sees it: "acknowledged, effect missing", counted
// among the events lost, and the run FAILs.
func TestForgetfulReceiverFails(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	o := options{store: "memory", senders: 4, events: 80, attempts: 4, seed: 1, forgetful: true}
	code := chaos(context.Background(), o, &stdout, &stderr)
	t.Logf("%s", stdout.String())
	if code != 1 {
		t.Fatalf("exit %d, want 1: an acknowledged event's effect was lost and the harness did not notice\nstderr:\n%s", code, stderr.String())
	}
	rows := table(t, stdout.String())
	missing := count(t, rows, "acknowledged, effect missing")
	if missing == 0 {
		t.Error("no acknowledged event found without its effect")
	}
	if n := count(t, rows, "events lost"); n < missing {
		t.Errorf("%d events lost, want at least the %d acknowledged and missing", n, missing)
	}
	if !strings.HasPrefix(rows["result"], "FAIL") {
		t.Errorf("result %q, want FAIL", rows["result"])
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-kill-receiver", "2"},
		{"-store-faults"},
		{"-store", "redis://127.0.0.1:6379/0", "-kill-receiver", "1"},
		{"-store", "redis://127.0.0.1:6379/0", "-store-faults", "-kill-sender", "1"},
		{"-kill-sender", "-1"},
		{"-kill-sender", "1", "-path-spellings"},
		{"-restart-redis", "-1"},
		{"-restart-redis", "1", "-store", "redis://127.0.0.1:6379/0"},
		{"-restart-redis", "1", "-kill-sender", "1"},
		{"-redis-aof"},
		{"-stall-for", "1s"},
		{"-store", "redis://127.0.0.1:6379/0", "-stall-for", "-1s"},
		{"-store", "redis://127.0.0.1:6379/0", "-pg-terminate", "3"},
		{"-store", "postgres://127.0.0.1:5432/x", "-pg-terminate", "-1"},
		{"-store", "postgres://127.0.0.1:5432/x", "-pg-terminate", "1", "-kill-sender", "1"},
		{"-write-delay", "-1ms"},
		{"-failover", "-store", "redis://127.0.0.1:6379/0"},
		{"-failover", "-restart-redis", "1"},
		{"-wait-replicas", "1"},
		{"-failover", "-wait-replicas", "-1"},
		{"-store", "postgres://db.example.com:5432/x"},
		{"-store", "redis://127.0.0.1/0"},
		{"-store", "mysql://127.0.0.1:3306/x"},
		{"-senders", "0"},
		{"-events", "-1"},
		{"-nope"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("chaos %q: exit %d, want 2", args, code)
		}
		if stdout.Len() != 0 {
			t.Errorf("chaos %q printed %q", args, stdout.String())
		}
	}
}

func TestMakeEventsSeeded(t *testing.T) {
	a, b := makeEvents(200, 7, "r", false), makeEvents(200, 7, "r", false)
	invalid, twice := 0, 0
	for i := range a {
		if !bytes.Equal(a[i].body, b[i].body) || a[i].key != b[i].key || (a[i].twice == nil) != (b[i].twice == nil) {
			t.Fatalf("event %d differs between two runs with the same seed", i)
		}
		if a[i].id == "" {
			invalid++
		} else if !bytes.Contains(a[i].body, []byte(`"id":"`+a[i].id+`"`)) {
			t.Errorf("event %d: body %s lacks id %s", i, a[i].body, a[i].id)
		}
		if a[i].twice != nil {
			twice++
		}
	}
	if invalid != 6 || twice != 10 {
		t.Errorf("%d invalid, %d sent twice; want 6 and 10", invalid, twice)
	}
}

// TestPostgresTerminate kills the receiver's PostgreSQL connections under
// load without the cuts of -store-faults (-pg-terminate): every kill
// lands, and nothing runs twice.
func TestPostgresTerminate(t *testing.T) {
	t.Parallel()
	rows := runChaos(t, "-store", testkit.SharedPostgresURL(), "-pg-terminate", "5", "-write-delay", "5ms", "-events", "150")
	if n := count(t, rows, "pg_terminate_backend"); n != 5 {
		t.Errorf("%d pg_terminate_backend rounds, want 5", n)
	}
	if n := count(t, rows, "store cuts"); n != 0 {
		t.Errorf("%d store cuts, want none without -store-faults", n)
	}
}

// TestLeaseStall90 stalls the receiver's connections to the store once, for
// 0.9 of the lease, while handlers run (each write pauses): a stall shorter
// than the lease loses no record and runs nothing twice. Before the store's
// lease covered the promise (ead4a05: the store grants Lease + Lease/2 +
// StoreTimeout), this run had events run twice on Redis and PostgreSQL.
func TestLeaseStall90(t *testing.T) {
	for name, store := range map[string]string{
		"redis":    testkit.SharedURL(),
		"postgres": testkit.SharedPostgresURL(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runChaos(t, "-store", store, "-stall-for", (lease * 9 / 10).String(), "-write-delay", "50ms", "-events", "150")
		})
	}
}
