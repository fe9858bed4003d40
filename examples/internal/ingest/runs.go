package ingest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Runs is what a [Service] counted of its handler runs, per feature id: the
// proof, or disproof, that each event took effect once. A run counts for
// every feature it was about to write.
//
// Attempts and Effects differ where a run stopped without effect: a
// PostgreSQL transaction rolled back (a connection killed, a process killed
// before the commit, a completion refused by fencing) or a write the
// in-memory feature store refused for room. A PostgreSQL run whose first
// attempt was rolled back and whose retry committed has Attempts 2 and
// Effects 1: not a second run of its effect. An event whose Effects exceed 1
// ran twice, whatever the in-memory guard absorbed.
type Runs struct {
	// Attempts counts the handler runs that reached the feature write,
	// counted in process (and in Config.RunLog) just before the write; nil
	// unless Config.CountRuns.
	Attempts map[string]int
	// Skipped counts the runs whose write the in-memory feature store (memory
	// and Redis modes) skipped because an earlier run of the same key had
	// written them in this process: a second run of the handler that the key
	// store did not prevent (its record was lost). nil in PostgreSQL mode,
	// which has no such guard.
	Skipped map[string]int
	// Effects counts the runs that took effect. PostgreSQL: the runs whose
	// transaction committed, read from the feature table's writes column,
	// which the write increments inside the handler's transaction (with the
	// key's completion), so a rolled-back attempt leaves no count; it covers
	// every process on the table. Memory and Redis: the runs that wrote, plus
	// the runs the guard skipped (each would have written again without it).
	Effects map[string]int
}

// Runs returns the service's counts. Attempts and Skipped are this
// process's (a killed process takes its counts along: see Config.RunLog);
// Effects are read from the feature store.
func (s *Service) Runs(ctx context.Context) (Runs, error) {
	effects, skipped, err := s.backend.repo.effects(ctx)
	if err != nil {
		return Runs{}, err
	}
	return Runs{Attempts: s.runs.attempts(), Skipped: skipped, Effects: effects}, nil
}

// Lines of a run log (Config.RunLog): the verb, a space, the feature id as a
// Go-quoted string.
const (
	runLogRun  = "run"
	runLogSkip = "skip"
)

// runCounter counts, before each feature write, the run that is about to
// write, and the in-memory guard's skips: in process, in two metrics, and in
// an optional log that outlives the process.
type runCounter struct {
	runsTotal, skipsTotal prometheus.Counter

	mu   sync.Mutex
	n    map[string]int // attempts per feature id; nil: not kept
	log  io.Writer      // nil: none
	line []byte         // scratch, under mu
}

// newRunCounter registers the counter's metrics in reg; perID keeps the
// attempts per feature id in memory.
func newRunCounter(reg prometheus.Registerer, log io.Writer, perID bool) *runCounter {
	c := &runCounter{
		runsTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "geoidem_feature_runs_total",
			Help: "Features that a handler run was about to write, counted before the write (a run rolled back or refused counts too)."}),
		skipsTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "geoidem_feature_write_skips_total",
			Help: "Features whose write the in-memory feature store skipped because an earlier run of the same key had written them: a handler run twice that the key store did not prevent."}),
		log: log,
	}
	if perID {
		c.n = map[string]int{}
	}
	reg.MustRegister(c.runsTotal, c.skipsTotal)
	return c
}

// run counts a run about to write fs. An error means the run log could not
// take the lines: the run must stop before the write, since a count that
// missed it would pass a test wrongly.
func (c *runCounter) run(fs []feature) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writeLog(runLogRun, fs); err != nil {
		return err
	}
	if c.n != nil {
		for _, f := range fs {
			c.n[f.ID]++
		}
	}
	c.runsTotal.Add(float64(len(fs)))
	return nil
}

// skip records that the in-memory guard skipped the write of fs. It never
// fails: the run already counted, and the write is skipped either way.
func (c *runCounter) skip(fs []feature) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.writeLog(runLogSkip, fs)
	c.skipsTotal.Add(float64(len(fs)))
}

// writeLog writes one line per feature in a single Write, so that the lines
// of concurrent processes appending to one file do not interleave.
func (c *runCounter) writeLog(verb string, fs []feature) error {
	if c.log == nil {
		return nil
	}
	c.line = c.line[:0]
	for _, f := range fs {
		c.line = append(c.line, verb...)
		c.line = append(c.line, ' ')
		c.line = strconv.AppendQuote(c.line, f.ID)
		c.line = append(c.line, '\n')
	}
	if _, err := c.log.Write(c.line); err != nil {
		return fmt.Errorf("run log: %w", err)
	}
	return nil
}

func (c *runCounter) attempts() map[string]int {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// ReadRunLog reads what Config.RunLog received, from one or several
// processes: Attempts and Skipped per feature id (Effects is nil: it lives in
// the feature store). A last line cut short by a killed process is ignored.
func ReadRunLog(r io.Reader) (Runs, error) {
	out := Runs{Attempts: map[string]int{}, Skipped: map[string]int{}}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return out, nil // a line without its newline was cut short
		}
		if err != nil {
			return Runs{}, err
		}
		verb, quoted, ok := strings.Cut(string(bytes.TrimSuffix(line, []byte("\n"))), " ")
		id, qerr := strconv.Unquote(quoted)
		switch {
		case !ok || qerr != nil:
			return Runs{}, fmt.Errorf("run log: malformed line %q", line)
		case verb == runLogRun:
			out.Attempts[id]++
		case verb == runLogSkip:
			out.Skipped[id]++
		default:
			return Runs{}, fmt.Errorf("run log: unknown line %q", line)
		}
	}
}
