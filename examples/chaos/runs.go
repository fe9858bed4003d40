package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/newest"
)

// runs is what a receiver counted of its handler runs, per feature id: the
// proof, or disproof, that each event took effect once. A run counts for
// every feature it was about to write.
//
// Attempts and Effects differ where a run stopped without effect: a
// PostgreSQL transaction rolled back (a connection killed, a process killed
// before the commit, a completion refused by fencing) or a write the
// in-memory feature store refused for room. A PostgreSQL run whose first
// attempt was rolled back and whose retry committed has Attempts 2 and
// Effects 1: not a second run of its effect. An event whose Effects exceed
// 1 ran twice.
type runs struct {
	// Attempts counts the handler runs that reached the feature write,
	// counted just before it (by runCounter, in process or in a run log).
	Attempts map[string]int
	// Effects counts the runs that took effect. PostgreSQL: the runs whose
	// transaction committed, read from the feature table's writes column,
	// which the write increments inside the handler's transaction (with
	// the key's completion), so a rolled-back attempt leaves no count; it
	// covers every process on the table. Memory and Redis: the runs whose
	// write the in-memory feature store took.
	Effects map[string]int
}

// runCounter wraps a service's feature store (service.Config.WrapFeatures)
// to count its handler runs: before each write, the run about to write
// (in memory, and as a line per feature in an optional log that outlives
// the process); after a write the store took, its effect and the features
// it wrote. It may also pause each write before it commits, so that more
// handlers are running when a fault strikes.
type runCounter struct {
	delay time.Duration // pause between a write and its commit (0: none)
	// effectDelay pauses after a write took effect, before the handler
	// returns and the middleware completes the key (0: none): the window
	// in which a killed receiver leaves an effect without its record.
	effectDelay time.Duration

	mu       sync.Mutex
	attempts map[string]int
	effects  map[string]int // runs whose write the store took
	writes   map[string]int // features written (newest.Replace) by those runs
	log      io.Writer      // nil: none
	line     []byte         // scratch, under mu
	// logEffects appends a line to log for each feature of a write the
	// store took, and one for each it wrote, too: for a feature store in
	// the memory of a process that may be killed (runLogTook, runLogWrote).
	logEffects bool
}

// newRunCounter returns a counter that appends its lines to log (nil: no
// log) and pauses each write for delay.
func newRunCounter(log io.Writer, delay time.Duration) *runCounter {
	return &runCounter{delay: delay, log: log, attempts: map[string]int{}, effects: map[string]int{}, writes: map[string]int{}}
}

// wrap is the counter as a service.Config.WrapFeatures.
func (c *runCounter) wrap(fs service.FeatureStore) service.FeatureStore {
	return countedFeatures{FeatureStore: fs, c: c}
}

type countedFeatures struct {
	service.FeatureStore
	c *runCounter
}

// Upsert counts the run, then writes: a run the log cannot take stops
// before the write, with an error the service answers 503 (an error it
// does not know: transient), since a count that missed a run would pass a
// test wrongly.
func (f countedFeatures) Upsert(ctx context.Context, hold *keystore.Hold, fs []service.Feature, answer func([]newest.Verdict) service.Answer) (service.Answer, error) {
	if err := f.c.run(fs); err != nil {
		return service.Answer{}, err
	}
	var verdicts []newest.Verdict
	rec, err := f.FeatureStore.Upsert(ctx, hold, fs, func(v []newest.Verdict) service.Answer {
		verdicts = v
		pause(ctx, f.c.delay) // written, not yet committed
		return answer(v)
	})
	if err == nil {
		f.c.took(fs, verdicts)
		pause(ctx, f.c.effectDelay) // the effect done, the key not yet completed
	}
	return rec, err
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// run counts a run about to write fs.
func (c *runCounter) run(fs []service.Feature) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log != nil {
		// One line per feature, in a single Write, so that the lines of
		// processes appending to one file do not interleave.
		c.line = c.line[:0]
		for _, f := range fs {
			c.line = appendLogLine(c.line, runLogRun, f.ID)
		}
		if _, err := c.log.Write(c.line); err != nil {
			return fmt.Errorf("run log: %w", err)
		}
	}
	for _, f := range fs {
		c.attempts[f.ID]++
	}
	return nil
}

// took counts a run whose write the store took.
//
// With logEffects its lines go to the log as well, in one Write. The write
// has happened: a log that cannot take them misses an effect, and the
// counts of the log would show the event lost, not hide a second run.
func (c *runCounter) took(fs []service.Feature, verdicts []newest.Verdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.line = c.line[:0]
	for i, f := range fs {
		c.effects[f.ID]++
		c.line = appendLogLine(c.line, runLogTook, f.ID)
		if verdicts[i] == newest.Replace {
			c.writes[f.ID]++
			c.line = appendLogLine(c.line, runLogWrote, f.ID)
		}
	}
	if c.log != nil && c.logEffects {
		_, _ = c.log.Write(c.line)
	}
}

// appendLogLine appends a run log line: verb, a space, the quoted id.
func appendLogLine(b []byte, verb, id string) []byte {
	b = append(b, verb...)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, id)
	return append(b, '\n')
}

// counts returns copies of the attempts, effects and writes.
func (c *runCounter) counts() (attempts, effects, writes map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.attempts), maps.Clone(c.effects), maps.Clone(c.writes)
}

// A run log's lines: the verb, a space, the feature id as a Go-quoted
// string. "run": a handler run about to write the feature; "took": a run
// whose write the feature store took; "wrote": one that replaced the
// stored feature (the last two with logEffects only).
const (
	runLogRun   = "run"
	runLogTook  = "took"
	runLogWrote = "wrote"
)

// readRunLog reads the attempts a run log received, from one or several
// processes. A last line cut short by a killed process is ignored.
func readRunLog(r io.Reader) (map[string]int, error) {
	l, err := readRunLogAll(r)
	return l.attempts, err
}

// logCounts is what a run log holds, per feature id.
type logCounts struct {
	attempts, effects, writes map[string]int
}

// readRunLogAll reads every count of a run log.
func readRunLogAll(r io.Reader) (logCounts, error) {
	l := logCounts{attempts: map[string]int{}, effects: map[string]int{}, writes: map[string]int{}}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return l, nil // a line without its newline was cut short
		}
		if err != nil {
			return logCounts{}, err
		}
		verb, quoted, ok := strings.Cut(string(bytes.TrimSuffix(line, []byte("\n"))), " ")
		id, qerr := strconv.Unquote(quoted)
		if !ok || qerr != nil {
			return logCounts{}, fmt.Errorf("run log: malformed line %q", line)
		}
		switch verb {
		case runLogRun:
			l.attempts[id]++
		case runLogTook:
			l.effects[id]++
		case runLogWrote:
			l.writes[id]++
		default:
			return logCounts{}, fmt.Errorf("run log: unknown line %q", line)
		}
	}
}

// add adds o's counts to l's.
func (l logCounts) add(o logCounts) {
	addCounts(l.attempts, o.attempts)
	addCounts(l.effects, o.effects)
	addCounts(l.writes, o.writes)
}

func addCounts(dst, src map[string]int) {
	for id, n := range src {
		dst[id] += n
	}
}

// pgWrites reads the writes column of a PostGIS feature table: the
// committed writes per feature id, from every process on the table.
func pgWrites(ctx context.Context, url, table string) (map[string]int, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT id, writes FROM `+pgx.Identifier{table}.Sanitize())
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	return out, err
}

// runCount is what the table shows of the receiver's run counts: how often
// each event's handler reached the feature write, and how often that took
// effect.
type runCount struct {
	attempts       int // runs that reached the write, counted before it
	attemptedTwice int // events attempted more than once
	effects        int // runs that took effect
	undone         int // attempts without effect: rolled back or refused
	twice          int // events whose effect ran more than once
	twiceIDs       []string
	source         string // where effects come from
}

// countRuns sums r over the feature ids. An event ran twice when its
// effects exceed 1: two committed PostgreSQL transactions, or two
// in-memory runs that wrote; a rolled-back attempt is not a second run.
func countRuns(r runs, source string) runCount {
	c := runCount{source: source}
	for id, n := range r.Attempts {
		c.attempts += n
		if n > 1 {
			c.attemptedTwice++
		}
		c.undone += max(0, n-r.Effects[id])
	}
	for id, n := range r.Effects {
		c.effects += n
		if n > 1 {
			c.twice++
			c.twiceIDs = append(c.twiceIDs, id)
		}
	}
	return c
}

// effectSource says where a store's effects are counted.
func effectSource(o options) string {
	switch {
	case o.naive:
		return "every run writes"
	case o.kind() == postgresStore:
		return "committed: the writes column, incremented in the handler's transaction"
	case o.receivers > 1:
		return "the upserts counter of each feature in Redis, incremented in the MULTI of its write"
	case o.kind() == redisStore:
		return "the writes Redis took, counted in the receiver's process"
	}
	return "the writes the in-memory feature store took"
}

// newRunLog returns the path of a run log in a fresh temporary directory:
// the file every -serve-receiver child appends its runs to.
func newRunLog() (string, error) {
	dir, err := os.MkdirTemp("", "geoidem-chaos-runs-")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "runs.log"), nil
}

// removeRunLog removes the run log and its directory.
func removeRunLog(path string) { _ = os.RemoveAll(filepath.Dir(path)) }

// Runs reads the attempts of every child from the run log (a killed
// child's lines stay in the file) and the effects from the table.
func (c *child) Runs(ctx context.Context) (runs, error) {
	effects, err := c.Writes(ctx)
	if err != nil {
		return runs{}, err
	}
	f, err := os.Open(c.runLog)
	if errors.Is(err, os.ErrNotExist) {
		return runs{Attempts: map[string]int{}, Effects: effects}, nil
	}
	if err != nil {
		return runs{}, err
	}
	defer f.Close()
	attempts, err := readRunLog(f)
	if err != nil {
		return runs{}, err
	}
	return runs{Attempts: attempts, Effects: effects}, nil
}
