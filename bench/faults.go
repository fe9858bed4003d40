package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// Section 7: store faults. Each row is one run of
// examples/chaos, the harness that counts handler runs per event, under one
// fault of the key store: a Redis restart without persistence and with AOF
// (appendfsync always), a stall of the path to Redis under load, a
// failover from a primary to its replica with and without WaitReplicas, and
// pg_terminate_backend of the receiver's PostgreSQL connections under load,
// next to a run of the same store without a store fault (the harness's
// HTTP faults alone: lost acknowledgements, injected 503 and 429, resets,
// held requests). The section builds the harness once and runs the binary;
// each row quotes the `go run ./examples/chaos` command that reproduces it.
//
// The "reported before" column quotes the figures measured on the code
// before its fixes for store faults, by whoever reported them, with
// examples/ingest's defaults (30 s lease, 2 s store timeout, 3,000 keys),
// not by this run: it is there to set the figures side by side, not to
// compare like with like. The harness runs with its own short timings
// (1 s lease, 250 ms store timeout, 4 attempts per delivery), so a key
// blocked in flight is blocked for 1 s, not 30 s.

// faultCase is one row of the section: the chaos flags of its fault.
type faultCase struct {
	name   string
	short  string   // the label under its bars in the figure
	flags  []string // the fault's own flags; the section adds the sizes
	before string   // the figure measured on the old code, or "—"
}

func faultCases(o *options) []faultCase {
	redisURL := "redis://" + o.redisAddr + "/0"
	stall := o.faultStall.String()
	return []faultCase{
		{name: "Redis, no store fault (HTTP faults only)", short: "Redis, none", flags: []string{"-store", redisURL}, before: "—"},
		{name: "Redis restart (SIGKILL), no persistence (AcceptVolatile)", short: "restart, volatile", flags: []string{"-restart-redis", "1"},
			before: "1,202 of 3,000 keys ran twice (and 13 concurrent duplicates)"},
		{name: "Redis restart (SIGKILL), appendonly yes, appendfsync always", short: "restart, AOF", flags: []string{"-restart-redis", "1", "-redis-aof"}, before: "not reported"},
		{name: "Redis stalled " + stall + " under load (tcpcut Stall)", short: "Redis stall", flags: []string{"-store", redisURL, "-stall-for", stall},
			before: "2 keys ran twice (3 s stall); 6 (10 s stall)"},
		{name: "Redis failover, WaitReplicas 0 (1 s replication stall, primary SIGKILLed, replica promoted)", short: "failover", flags: []string{"-failover", "-wait-replicas", "0"},
			before: "307 re-executions (1 s replication stall)"},
		{name: "Redis failover, WaitReplicas 1 (the same)", short: "failover, Wait 1", flags: []string{"-failover", "-wait-replicas", "1"},
			before: "6 re-executions"},
		{name: "PostgreSQL, no store fault (HTTP faults only)", short: "PG, none", flags: []string{"-store", o.postgresURL}, before: "—"},
		{name: fmt.Sprintf("PostgreSQL, %d pg_terminate_backend under load", o.faultPGKills), short: "PG kills",
			flags:  []string{"-store", o.postgresURL, "-pg-terminate", strconv.Itoa(o.faultPGKills)},
			before: "1 to 7 dead letters per run (20 kills), all stored when re-driven after 31 s"},
	}
}

// faultResult is what one chaos run printed, in numbers.
type faultResult struct {
	valid, effects, attempts   int // valid events; runs that took effect; runs reaching the write
	twice, lost, written2      int
	dead, permanent, redriven  int
	dead409, dead503, deadNone int // dead letters by their last answer
	deadOther                  int
	redriveFailed              int
	storeErrors                string // "n/a" when unknown
	faults                     string // the fault lines that fired
	pass                       bool
	elapsed                    time.Duration
}

func runFaults(ctx context.Context, s *section) error {
	o := s.o
	if _, err := testkit.LookPath(); err != nil {
		return notAvailable{err.Error() + ": the restart rows start a redis-server of their own"}
	}
	bin, cleanup, err := buildChaos(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	sizes := []string{"-events", strconv.Itoa(o.faultEvents), "-senders", strconv.Itoa(o.faultSenders),
		"-write-delay", o.faultWriteDelay.String(), "-seed", strconv.FormatUint(o.seed, 10)}
	s.line("Handler runs per event under faults of the key store, counted by `examples/chaos`: each row is one run of the harness,")
	s.line("%d events (3%% invalid, 5%% sent twice at once) from %d paired senders through its fault-injecting proxy, every feature write paused %v,", o.faultEvents, o.faultSenders, o.faultWriteDelay)
	s.line("then the dead letters re-driven and every event re-sent once with its key and payload. *Runs per event* is the runs that took effect")
	s.line("over the valid events (1.00 is exactly-once); *events run twice* counts the events whose effect ran more than once (on PostgreSQL")
	s.line("a run rolled back by a killed connection is not counted: the count is the committed writes column). *Dead letters* are the first")
	s.line("pass's deliveries that ended without success, the invalid events' permanent ones left out; *events lost* counts the valid events")
	s.line("not stored in the end and the acknowledged ones whose feature was missing after the receiver's restart, before any re-send;")
	s.line("those whose last answer was a 409 are keys blocked in flight (the others are mostly the harness's HTTP faults).")
	s.line("The harness's timings are short (1 s lease, 250 ms store timeout, 4 attempts per delivery); the *reported before* column is the")
	s.line("figures for the code before its fixes for store faults, measured with `examples/ingest`'s defaults (30 s lease, 2 s store timeout, 3,000 keys),")
	s.line("**not by this run**. The failover rows run a primary and a replica of the harness's own: replication stalls for 1 s under load, the")
	s.line("primary is SIGKILLed, the replica promoted (`REPLICAOF NO ONE`) and the receiver pointed at it, and the old primary rejoins, empty, as its replica.")
	s.line("")
	header := []string{"fault", "runs per event", "events run twice", "dead letters (re-driven, failed again)", "dead letters by last answer", "events lost", "store 503s", "faults fired", "reported before (old code; not this run)", "command"}
	var (
		rows           [][]string
		groups         []string
		twice, dead    []float64
		dead409        []float64
		failed         []string
		worstTwiceCase string
		worstTwice     = -1
	)
	for _, c := range faultCases(o) {
		if err := ctx.Err(); err != nil {
			return err
		}
		args := append(append([]string{}, c.flags...), sizes...)
		command := "go run ./examples/chaos " + shellJoin(args)
		o.logf("faults: %s", command)
		r, err := runChaos(ctx, bin, args)
		if err != nil {
			rows = append(rows, []string{c.name, "—", "—", "—", "—", "—", "—", "—", c.before, fmt.Sprintf("`%s`: **%v**", command, err)})
			failed = append(failed, c.name)
			continue
		}
		perEvent := math.NaN() // runs per valid event
		if r.valid > 0 {
			perEvent = float64(r.effects) / float64(r.valid)
		}
		rows = append(rows, []string{c.name, fmt.Sprintf("%.3f (%d runs, %d reached the write)", perEvent, r.effects, r.attempts),
			strconv.Itoa(r.twice),
			fmt.Sprintf("%d (%d, %d)", r.dead-r.permanent, r.redriven, r.redriveFailed),
			fmt.Sprintf("%d 409 (key in flight), %d 503, %d none, %d other", r.dead409, r.dead503, r.deadNone, r.deadOther),
			strconv.Itoa(r.lost), r.storeErrors, r.faults, c.before, "`" + command + "`"})
		groups = append(groups, c.short)
		twice = append(twice, float64(r.twice))
		dead = append(dead, float64(r.dead-r.permanent))
		dead409 = append(dead409, float64(r.dead409))
		if r.twice > worstTwice {
			worstTwice, worstTwiceCase = r.twice, c.name
		}
		o.logf("faults: %s: %d run twice, %d dead letters, %v", c.name, r.twice, r.dead-r.permanent, r.elapsed.Round(time.Millisecond))
	}
	s.table(header, rows)
	if len(groups) > 0 {
		if err := s.figure("faults.svg", "events run twice and dead letters per store fault", barChart{
			title: "Store faults: events run twice and dead letters (examples/chaos)", yLabel: "events",
			groups: groups, names: []string{"events run twice", "dead letters", "of which 409 last"}, values: [][]float64{twice, dead, dead409},
		}.render()); err != nil {
			return err
		}
		s.headline("store faults: most events run twice",
			"%d (%s), of %d events", worstTwice, worstTwiceCase, o.faultEvents)
	}
	if len(failed) > 0 {
		return fmt.Errorf("chaos did not complete: %s", strings.Join(failed, "; "))
	}
	return nil
}

// buildChaos builds examples/chaos into a temporary directory, from the
// workspace the bench runs in (go.work puts the examples module beside the
// bench's), so that no row pays for compiling it.
func buildChaos(ctx context.Context) (bin string, cleanup func(), err error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", nil, errors.New("not inside the geoidem module: run the bench from its root")
	}
	dir, err := os.MkdirTemp("", "geoidem-bench-chaos-")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "chaos")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/geoidem/geoidem/examples/chaos")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build ./examples/chaos: %w\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// runChaos runs the harness and reads its table. The harness exits 1 when
// an event ran twice or was lost: that is a result, not an error; a run
// that printed no result line is one.
func runChaos(ctx context.Context, bin string, args []string) (*faultResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	rows := chaosRows(stdout.String())
	if _, ok := rows["result"]; !ok {
		return nil, fmt.Errorf("chaos: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
		return nil, fmt.Errorf("chaos: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var invalid int
	r := &faultResult{elapsed: time.Since(t0), pass: strings.HasPrefix(rows["result"], "PASS"), storeErrors: rows["store 503s (fail closed)"]}
	ints := []struct {
		row string
		at  int // the index of the integer among the row's integers
		to  *int
	}{
		{"runs that took effect", 0, &r.effects}, {"runs reaching the write", 0, &r.attempts},
		{"events run twice", 0, &r.twice},
		{"events lost", 0, &r.lost}, {"features written twice", 0, &r.written2},
		{"dead-lettered (first pass)", 0, &r.dead}, {"dead-lettered (first pass)", 1, &r.permanent},
		{"re-driven", 0, &r.redriven}, {"re-driven", 1, &r.redriveFailed},
		{"events", 0, &r.valid}, {"events", 1, &invalid},
	}
	for _, f := range ints {
		n, err := nthInt(rows[f.row], f.at)
		if err != nil {
			return nil, fmt.Errorf("chaos row %q = %q: %w", f.row, rows[f.row], err)
		}
		*f.to = n
	}
	r.valid -= invalid
	byAnswer := strings.Split(rows["dead letters by last answer"], ", ")
	if len(byAnswer) != 4 {
		return nil, fmt.Errorf("chaos row %q = %q: want 4 parts", "dead letters by last answer", rows["dead letters by last answer"])
	}
	for i, to := range []*int{&r.dead409, &r.dead503, &r.deadNone, &r.deadOther} {
		if *to, err = nthInt(byAnswer[i], 0); err != nil {
			return nil, fmt.Errorf("chaos row %q = %q: %w", "dead letters by last answer", rows["dead letters by last answer"], err)
		}
	}
	var fired []string
	for _, f := range []struct{ row, name string }{
		{"Redis restarts", "restarts"}, {"Redis failovers", "failovers"}, {"store stalls", "stalls"}, {"pg_terminate_backend", "pg_terminate_backend"}, {"store cuts", "cuts"},
	} {
		if n, err := nthInt(rows[f.row], 0); err == nil && n > 0 {
			fired = append(fired, fmt.Sprintf("%d %s", n, f.name))
		}
	}
	if n, err := nthInt(rows["pg_terminate_backend"], 1); err == nil && n > 0 {
		fired = append(fired, fmt.Sprintf("%d connections killed", n))
	}
	if len(fired) == 0 {
		fired = []string{"none"}
	}
	r.faults = strings.Join(fired, ", ")
	return r, nil
}

// chaosRows parses the harness's table: a row's name, two or more spaces,
// its value.
func chaosRows(out string) map[string]string {
	rows := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), "  "); ok {
			rows[name] = strings.TrimSpace(value)
		}
	}
	return rows
}

// nthInt returns the n-th (from 0) whole number in s.
func nthInt(s string, n int) (int, error) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if n >= len(f) {
		return 0, fmt.Errorf("no number %d", n+1)
	}
	return strconv.Atoi(f[n])
}

// shellJoin quotes the arguments a shell would otherwise expand.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if strings.ContainsAny(a, "?&*$;|<> '\"") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
