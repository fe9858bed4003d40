package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// What a linearizability run did below the Store API, so that its failure
// says whether the store or the test is wrong: the checker judges leases
// on the test's clock, from the interval of each call, and the store on
// the database's clock, at the instant each statement reads it
// (clock_timestamp(), which claimSQL reads once, at its start, before it
// may wait for a row lock; the effect is visible only at the commit, later
// still). A failure whose offending calls the database log shows acting as
// they reported, inside their intervals, with the two clocks in step, is
// the store's; one where the clocks drifted apart, the search gave up, or
// the workload under load never reached a case is the test's.

// stmtTracer is a pgx.QueryTracer recording each of the store's
// statements: its kind, keys and tokens, backend, and when it was sent and
// returned on the run's timeline.
type stmtTracer struct {
	kinds atomic.Pointer[map[string]string] // SQL → kind (see pgstore.StatementKinds)
	start atomic.Pointer[time.Time]         // the timeline's origin

	mu    sync.Mutex
	stmts []*tracedStmt
}

type tracedStmt struct {
	kind       string
	keys       []string
	tokens     []int64
	pid        uint32
	start, end time.Duration
	err        error
}

type tracedStmtKey struct{}

// begin starts a timeline at t0 for the statements of s, forgetting those
// recorded before.
func (tr *stmtTracer) begin(s *pgstore.Store, t0 time.Time) {
	kinds := pgstore.StatementKinds(s)
	tr.kinds.Store(&kinds)
	tr.start.Store(&t0)
	tr.mu.Lock()
	tr.stmts = nil
	tr.mu.Unlock()
}

func (tr *stmtTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	kinds, t0 := tr.kinds.Load(), tr.start.Load()
	if kinds == nil || t0 == nil {
		return ctx
	}
	kind, ok := (*kinds)[d.SQL]
	if !ok {
		return ctx
	}
	st := &tracedStmt{kind: kind, pid: conn.PgConn().PID(), start: time.Since(*t0)}
	if len(d.Args) > 0 {
		st.keys = argStrings(d.Args[0])
	}
	tokenArg := 1
	if strings.HasPrefix(kind, "claim") {
		tokenArg = 3
	}
	if len(d.Args) > tokenArg {
		st.tokens = argInts(d.Args[tokenArg])
	}
	return context.WithValue(ctx, tracedStmtKey{}, st)
}

func (tr *stmtTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	st, ok := ctx.Value(tracedStmtKey{}).(*tracedStmt)
	if !ok {
		return
	}
	st.end, st.err = time.Since(*tr.start.Load()), d.Err
	tr.mu.Lock()
	tr.stmts = append(tr.stmts, st)
	tr.mu.Unlock()
}

func argStrings(a any) []string {
	switch v := a.(type) {
	case string:
		return []string{v}
	case *pgtype.Text:
		return []string{v.String}
	case []string:
		return v
	}
	return nil
}

func argInts(a any) []int64 {
	switch v := a.(type) {
	case int64:
		return []int64{v}
	case *pgtype.Int8:
		return []int64{v.Int64}
	case []int64:
		return v
	}
	return nil
}

// latency summarises the statements' latencies (send to return).
func (tr *stmtTracer) latency() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.stmts) == 0 {
		return "no statements"
	}
	ds := make([]time.Duration, len(tr.stmts))
	for i, st := range tr.stmts {
		ds[i] = st.end - st.start
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("%d statements, latency p50 %v, p90 %v, p99 %v, max %v", len(ds), q(0.5), q(0.9), q(0.99), ds[len(ds)-1].Round(10*time.Microsecond))
}

// loadAverage returns the machine's one-minute load average, as
// /proc/loadavg gives it, and its number of CPUs.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "load average unknown"
	}
	return fmt.Sprintf("load average %s", f[0])
}

// installAudit makes every write to s's table log, by a trigger, what it
// wrote and when, by the database's clock: the instant of the row's change
// (clock_timestamp()) and of its statement's start (statement_timestamp()),
// its backend and transaction. Reads (a replay, a Claim that finds the key
// in flight) write nothing and are not logged. The returned function reads
// the log of one key.
func installAudit(t *testing.T, admin *pgxpool.Pool, s *pgstore.Store, schema string) func(ctx context.Context, key string) ([]auditRow, error) {
	t.Helper()
	audit := pgx.Identifier{schema, "audit"}.Sanitize()
	fn := pgx.Identifier{schema, "audit_write"}.Sanitize()
	for _, q := range []string{
		`CREATE TABLE ` + audit + ` (at timestamptz, stmt_at timestamptz, pid integer, xid xid8, op text, key text,
			token bigint, old_token bigint, expires_at timestamptz, old_expires_at timestamptz,
			status integer, old_status integer, released boolean, old_released boolean, fenced bigint[])`,
		`CREATE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO ` + audit + ` VALUES (clock_timestamp(), statement_timestamp(), pg_backend_pid(), pg_current_xact_id(), TG_OP,
				coalesce(NEW.key, OLD.key), NEW.token, OLD.token, NEW.expires_at, OLD.expires_at,
				NEW.status, OLD.status, NEW.released, OLD.released, NEW.fenced);
			RETURN NULL;
		END $$`,
		`CREATE TRIGGER audit AFTER INSERT OR UPDATE OR DELETE ON ` + s.Table() + ` FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`,
	} {
		if _, err := admin.Exec(testCtx(t), q); err != nil {
			t.Fatalf("audit trigger: %v", err)
		}
	}
	return func(ctx context.Context, key string) ([]auditRow, error) {
		rows, err := admin.Query(ctx, `SELECT at, stmt_at, pid, xid::text, op, token, old_token, expires_at, old_expires_at,
			status, old_status, released, old_released, coalesce(array_to_string(fenced, ','), '')
			FROM `+audit+` WHERE key = $1 ORDER BY at`, key)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (auditRow, error) {
			var a auditRow
			err := r.Scan(&a.at, &a.stmtAt, &a.pid, &a.xid, &a.op, &a.token, &a.oldToken, &a.expiresAt, &a.oldExpiresAt,
				&a.status, &a.oldStatus, &a.released, &a.oldReleased, &a.fenced)
			return a, err
		})
	}
}

type auditRow struct {
	at, stmtAt              time.Time
	pid                     uint32
	xid, op, fenced         string
	token, oldToken         *int64
	expiresAt, oldExpiresAt *time.Time
	status, oldStatus       *int32
	released, oldReleased   *bool
}

// clockWatch samples the database's clock against the run's timeline:
// each sample bounds the offset between the two (the database's reading
// minus the timeline's origin, less the timeline's reading) by the round
// trip it took.
type clockWatch struct {
	mu      sync.Mutex
	lo, hi  []time.Duration // each sample's bounds on the offset
	t0      time.Time
	stopped chan struct{}
}

// watchClock samples every 20 ms on pool until ctx is done.
func watchClock(ctx context.Context, pool *pgxpool.Pool, t0 time.Time) *clockWatch {
	w := &clockWatch{t0: t0, stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			before := time.Since(t0)
			var db time.Time
			if err := pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&db); err == nil {
				after := time.Since(t0)
				at := db.Sub(t0.Round(0)) // the database's reading on the timeline's wall clock
				w.mu.Lock()
				w.lo, w.hi = append(w.lo, at-after), append(w.hi, at-before)
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// offset returns the offset the samples allow, [lo, hi], and whether
// they agree: some offset lies within every sample's bounds, give or take
// slack. If they disagree, the database's clock moved against the
// timeline's during the run (a step, or a rate the model does not allow).
func (w *clockWatch) offset(slack time.Duration) (lo, hi time.Duration, steady bool, n int) {
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lo) == 0 {
		return 0, 0, false, 0
	}
	lo, hi = slices.Max(w.lo), slices.Min(w.hi)
	return lo, hi, lo <= hi+slack, len(w.lo)
}

// toTimeline places a database time on the run's timeline, given the
// clock offset.
func (w *clockWatch) toTimeline(at time.Time, offset time.Duration) time.Duration {
	return at.Sub(w.t0.Round(0)) - offset
}

// diagnosedTB passes everything to the test, keeping the errors reported.
type diagnosedTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (d *diagnosedTB) Errorf(format string, args ...any) {
	d.TB.Helper()
	d.mu.Lock()
	d.errors = append(d.errors, fmt.Sprintf(format, args...))
	d.mu.Unlock()
	d.TB.Errorf(format, args...)
}

// linearizableRun is one keystoretest.Linearizable run on s, whose pool
// has tr as its tracer, with what the database did logged by readAudit
// and its clock watched on admin. If the run fails, it says why in the
// test's terms: the checker gave up, the database's clock and the test's
// disagreed, or the store's history is not linearizable with both clocks
// in step, and then it shows the database's own log of each offending
// key against the calls' statements.
func linearizableRun(t *testing.T, s *pgstore.Store, tr *stmtTracer, admin *pgxpool.Pool,
	readAudit func(context.Context, string) ([]auditRow, error), cfg keystoretest.LinearizableConfig) keystoretest.LinearizableStats {
	t.Helper()
	t0 := time.Now()
	tr.begin(s, t0)
	wctx, stopWatch := context.WithCancel(context.Background())
	watch := watchClock(wctx, admin, t0)
	d := &diagnosedTB{TB: t}
	st := keystoretest.Linearizable(d, s, cfg)
	stopWatch()
	slack := cfg.Slack
	if slack == 0 {
		slack = 5 * time.Millisecond
	}
	lo, hi, steady, samples := watch.offset(slack)
	t.Logf("%s; %s; the database's clock is %s the test's (%d samples, offset in [%v, %v])",
		loadAverage(), tr.latency(), map[bool]string{true: "in step with", false: "NOT in step with"}[steady], samples, lo, hi)
	d.mu.Lock()
	errs := slices.Clone(d.errors)
	d.mu.Unlock()
	if len(errs) == 0 {
		return st
	}

	var b strings.Builder
	gaveUp := false
	for _, e := range errs {
		gaveUp = gaveUp || strings.Contains(e, "search budget exhausted")
	}
	switch {
	case gaveUp:
		fmt.Fprintf(&b, "DIAGNOSIS: the checker gave up (its search budget ran out, with %d calls of unknown outcome): inconclusive, the test's limit, not evidence against the store.\n", st.Unknown)
	case !steady:
		fmt.Fprintf(&b, "DIAGNOSIS: the database's clock moved against the test's during the run (offset bounds [%v, %v] do not meet within the Slack of %v): the model's assumption about time broke, so the failure may be the test's.\n", lo, hi, slack)
	default:
		fmt.Fprintf(&b, "DIAGNOSIS: not linearizable with the database's clock in step with the test's (offset in [%v, %v], Slack %v). Below, each offending key's database log: a write the store made that the model cannot place, inside its call's interval, is the store's fault; a write outside every statement of its backend means the timeline is off (the test's).\n", lo, hi, slack)
	}
	off := (lo + hi) / 2
	tr.mu.Lock()
	stmts := slices.Clone(tr.stmts)
	tr.mu.Unlock()
	for _, key := range offendingKeys(errs, stmts) {
		fmt.Fprintf(&b, "key %.8s…, on the history's timeline (the test's clock, from within %v before the history's origin; database times less the offset %v):\n", key, firstCall(stmts), off)
		var lines []timedLine
		for _, st := range stmts {
			if !slices.Contains(st.keys, key) {
				continue
			}
			res := "ok"
			if st.err != nil {
				res = st.err.Error()
			}
			lines = append(lines, timedLine{st.start, fmt.Sprintf("stmt  [%s, %s] pid %d %s %s -> %s", msOf(st.start), msOf(st.end), st.pid, st.kind, tokensOf(st.tokens), res)})
		}
		rows, err := readAudit(context.Background(), key)
		if err != nil {
			fmt.Fprintf(&b, "  (the database's log: %v)\n", err)
		}
		for _, a := range rows {
			at := watch.toTimeline(a.at, off)
			flag := ""
			if !insideStatement(stmts, a.pid, at, hi-lo+slack) {
				flag = "  <- outside every traced statement of its backend"
			}
			lines = append(lines, timedLine{at, fmt.Sprintf("write %s (its statement began %s) pid %d xid %s %s%s%s",
				msOf(at), msOf(watch.toTimeline(a.stmtAt, off)), a.pid, a.xid, a.op, a.describe(watch, off), flag)})
		}
		slices.SortStableFunc(lines, func(x, y timedLine) int { return int(x.at - y.at) })
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l.text)
		}
	}
	t.Error(b.String())
	return st
}

type timedLine struct {
	at   time.Duration
	text string
}

// offendingKeys returns the keys whose first eight characters an error
// names as keystoretest.Linearizable does ("key 1 (0123abcd…)").
func offendingKeys(errs []string, stmts []*tracedStmt) []string {
	var keys []string
	for _, st := range stmts {
		for _, k := range st.keys {
			if len(k) >= 8 && !slices.Contains(keys, k) {
				for _, e := range errs {
					if strings.Contains(e, "("+k[:8]+"…)") {
						keys = append(keys, k)
						break
					}
				}
			}
		}
	}
	return keys
}

// firstCall returns when the first statement was sent: the history's
// origin lies between the timeline's and then.
func firstCall(stmts []*tracedStmt) time.Duration {
	first := time.Duration(0)
	for i, st := range stmts {
		if i == 0 || st.start < first {
			first = st.start
		}
	}
	return first
}

// insideStatement reports whether a traced statement of backend pid ran
// at at, give or take tolerance.
func insideStatement(stmts []*tracedStmt, pid uint32, at, tolerance time.Duration) bool {
	for _, st := range stmts {
		if st.pid == pid && at >= st.start-tolerance && at <= st.end+tolerance {
			return true
		}
	}
	return false
}

func (a auditRow) describe(w *clockWatch, off time.Duration) string {
	var b strings.Builder
	if a.oldToken != nil {
		fmt.Fprintf(&b, " %s", rowString(a.oldToken, a.oldExpiresAt, a.oldStatus, a.oldReleased, "", w, off))
	}
	if a.token != nil {
		fmt.Fprintf(&b, " -> %s", rowString(a.token, a.expiresAt, a.status, a.released, a.fenced, w, off))
	}
	return b.String()
}

func rowString(tok *int64, expires *time.Time, status *int32, released *bool, fenced string, w *clockWatch, off time.Duration) string {
	s := "{" + tokensOf([]int64{*tok})
	switch {
	case released != nil && *released:
		s += " released"
	case status != nil:
		s += fmt.Sprintf(" completed %d", *status)
	default:
		s += " in flight"
	}
	if expires != nil {
		s += " until " + msOf(w.toTimeline(*expires, off))
	}
	if fenced != "" {
		s += " fenced tok" + strings.ReplaceAll(fenced, ",", ",tok")
	}
	return s + "}"
}

func tokensOf(toks []int64) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = fmt.Sprintf("tok%d", t)
	}
	return strings.Join(parts, ",")
}

func msOf(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}
