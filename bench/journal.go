package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/client"
)

// Section 8: the sender's journal against the disk. An Outbox whose
// FileJournal syncs every record (while the first attempt runs, and before
// anything else) can deliver, one delivery at a time, at most as fast as
// the disk syncs; the goal is 0.9 of that. Measured in the same minutes, in interleaved rounds: a raw
// loop of append-and-fsync in the journal's directory, serial deliveries
// straight through a Sender (no journal), serial deliveries through the
// Outbox, all to one bare receiver on loopback, and the journal's steps
// done by hand around a delivery (the machine's own ceiling for an overlap).

// journalGoal is the goal for serial journal deliveries per second as
// a share of the disk's fsyncs per second.
const journalGoal = 0.9

// journalLine is the size of the raw loop's appended line: about a
// FileJournal record line of the delivery body below.
const journalLine = 320

// journalBlock is how many operations of one kind run in a row before the
// next kind's turn.
const journalBlock = 10

// journalBody is each delivery's body, that of client's BenchmarkJournalCost.
var journalBody = []byte(`{"type":"Feature","id":"f","geometry":{"type":"Point","coordinates":[1.5,2.25]},"properties":{"observation_time":"2026-03-01T12:00:00Z"}}`)

// opsRun is one bounded serial run: n operations in wall.
type opsRun struct {
	n    int
	wall time.Duration
}

func (r opsRun) rate() float64 { return float64(r.n) / r.wall.Seconds() }

// interleave runs ops in turn, block operations of each at a time, until
// one of them has done maxOps or maxTime has passed per op, and returns
// each one's run: its operations and the time they took. Fine-grained
// turns expose every op to the same moments of a shared disk.
func interleave(ctx context.Context, maxOps int, maxTime time.Duration, block int, ops ...func() error) ([]opsRun, error) {
	runs := make([]opsRun, len(ops))
	start := time.Now()
	for runs[0].n < maxOps && (runs[0].n == 0 || time.Since(start) < maxTime*time.Duration(len(ops))) {
		for i, op := range ops {
			t0 := time.Now()
			for range min(block, maxOps-runs[i].n) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if err := op(); err != nil {
					return nil, err
				}
				runs[i].n++
			}
			runs[i].wall += time.Since(t0)
		}
	}
	return runs, nil
}

// appendSync returns an op that appends a journalLine-byte line to f and
// syncs it with sync, as a journal that syncs every record must.
func appendSync(f *os.File, sync func(*os.File) error) func() error {
	line := []byte(strings.Repeat("x", journalLine-1) + "\n")
	return func() error {
		if _, err := f.Write(line); err != nil {
			return err
		}
		return sync(f)
	}
}

// overlapped returns an op that does by hand what a journaled delivery does,
// with no journal: it writes a journalLine-byte line to f (preallocated,
// as a FileJournal's file is), hands the line's datasync to a goroutine
// and yields, as the journal does, runs deliver meanwhile, waits for the
// sync and writes a line of half the size (the done mark). Its rate is the
// most a journal that overlaps each record's sync with its first attempt
// can reach on this machine.
func overlapped(f *os.File, deliver func() error) func() error {
	line := []byte(strings.Repeat("x", journalLine-1) + "\n")
	done := line[len(line)/2:]
	synced := make(chan error, 1)
	return func() error {
		if _, err := f.Write(line); err != nil {
			return err
		}
		go func() { synced <- datasync(f) }()
		runtime.Gosched()
		err := deliver()
		if serr := <-synced; err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		_, err = f.Write(done)
		return err
	}
}

// filesystemOf names the file system that holds dir, from /proc/mounts
// (the longest mount point that is a prefix of dir): "device, type", or
// "unknown".
func filesystemOf(dir string) string {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "unknown"
	}
	best, found := "", "unknown"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		mp := fields[1]
		under := abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")
		if under && len(mp) >= len(best) {
			best, found = mp, fmt.Sprintf("%s on %s, %s", fields[0], mp, fields[2])
		}
	}
	return found
}

func runJournal(ctx context.Context, s *section) error {
	o := s.o
	dir, err := os.MkdirTemp(o.journalDir, "geoidem-bench-journal-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer receiver.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	defer tr.CloseIdleConnections()
	sender, err := client.New(&http.Client{Transport: tr}, client.Config{})
	if err != nil {
		return err
	}
	j, err := client.OpenFileJournal(filepath.Join(dir, "journal"), client.FileJournalConfig{})
	if err != nil {
		return err
	}
	defer j.Close()
	outbox := client.NewOutbox(sender, j)
	var seq atomic.Int64
	delivery := func() client.Delivery {
		return client.Delivery{URL: receiver.URL, Key: "k" + strconv.FormatInt(seq.Add(1), 10), Body: journalBody}
	}
	check := func(res client.Result, err error) error {
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	bare := func() error { return check(sender.Deliver(ctx, delivery())) }
	journal := func() error { return check(outbox.Deliver(ctx, delivery())) }

	rounds := max(1, o.journalRounds)
	var fsyncs, bares, journals, datasyncs, overlaps []opsRun
	var ratio, vsData, extra, syncTime, ceiling, vsOverlap []float64
	for round := range rounds {
		o.logf("journal: round %d of %d", round+1, rounds)
		// New files each round, as the journal's compactions start
		// new files.
		var files []*os.File
		for _, name := range []string{"fsync-loop", "datasync-loop"} {
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				return err
			}
			defer f.Close()
			files = append(files, f)
		}
		raw, err := os.OpenFile(filepath.Join(dir, "overlap"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer raw.Close()
		if err := preallocate(raw, int64(o.journalOps+2*journalBlock)*journalLine*2); err != nil {
			return err
		}
		ops := []func() error{appendSync(files[0], (*os.File).Sync), bare, journal, appendSync(files[1], datasync), overlapped(raw, bare)}
		if round == 0 { // warm-up: the connection opened, the files created
			if _, err := interleave(ctx, journalBlock, time.Second, journalBlock, ops...); err != nil {
				return err
			}
		}
		r, err := interleave(ctx, o.journalOps, o.journalTime, journalBlock, ops...)
		if err != nil {
			return err
		}
		fsyncs, bares, journals, datasyncs = append(fsyncs, r[0]), append(bares, r[1]), append(journals, r[2]), append(datasyncs, r[3])
		overlaps = append(overlaps, r[4])
		ceiling = append(ceiling, r[4].rate()/r[0].rate())
		vsOverlap = append(vsOverlap, r[2].rate()/r[4].rate())
		ratio = append(ratio, r[2].rate()/r[0].rate())
		vsData = append(vsData, r[2].rate()/r[3].rate())
		extra = append(extra, (1/r[2].rate()-1/r[1].rate())*1e6)
		syncTime = append(syncTime, 1/r[0].rate()*1e6)
	}
	rates := func(rs []opsRun) []float64 {
		var v []float64
		for _, r := range rs {
			v = append(v, r.rate())
		}
		return v
	}
	medRange := func(v []float64, digits int) string {
		if len(v) == 1 {
			return fmt.Sprintf("%.*f", digits, v[0])
		}
		return fmt.Sprintf("%.*f (%.*f–%.*f)", digits, median(v), digits, slices.Min(v), digits, slices.Max(v))
	}

	s.line("The journal's directory is a new directory under `%s` (%s). Five operations run in turn, %d of one", filepath.Dir(dir), filesystemOf(dir), journalBlock)
	s.line("then %d of the next, so that all five meet the same moments of a shared disk; each round ends when the first has run %d times or after", journalBlock, o.journalOps)
	s.line("%v per operation, and there are %d rounds:", o.journalTime, rounds)
	s.line("")
	s.line("- **fsync loop**: append a %d-byte line to a file in that directory (new each round), then `fsync` it (`os.File.Sync`):", journalLine)
	s.line("  the rate at which this disk makes one record durable, the ceiling of a journal that syncs every record;")
	s.line("- **delivery, no journal**: `client.Sender.Deliver` of a %d-byte Feature to a bare receiver (`httptest.Server`, answers 201)", len(journalBody))
	s.line("  on loopback, each with a new key;")
	s.line("- **delivery, journal**: the same through `client.NewOutbox` over `client.OpenFileJournal` (default config), which writes")
	s.line("  each record before the first attempt, syncs it while that attempt runs, and appends a done mark once both are done;")
	s.line("- **%s loop**: the fsync loop with `%s` instead of `fsync`, for reference (the goal is against fsync);", datasyncName, datasyncName)
	s.line("- **overlap by hand**: a journaled delivery's steps with no journal: a %d-byte line written to a preallocated file, its", journalLine)
	s.line("  `%s` handed to a goroutine while a delivery without a journal runs, then a line of half the size once both are done:", datasyncName)
	s.line("  the most a journal that syncs each record while its first attempt runs can reach on this machine. Where a sync takes")
	s.line("  longer while the CPUs work beside it (as on a small virtual machine), this stays below the longer of a sync and a")
	s.line("  delivery timed alone.")
	s.line("")
	s.line("Rates are medians over the rounds with their ranges; the ratio is journal deliveries/s ÷ fsyncs/s within a round (the")
	s.line("goal: ≥ %.1f). *Journal's own time* is the time of a journal delivery less that of a delivery without a journal, against one fsync's.", journalGoal)
	s.line("")
	s.table([]string{"figure", "median (range)"}, [][]string{
		{"fsyncs/s", medRange(rates(fsyncs), 0)},
		{"deliveries/s, no journal", medRange(rates(bares), 0)},
		{"deliveries/s, journal", medRange(rates(journals), 0)},
		{datasyncName + "s/s", medRange(rates(datasyncs), 0)},
		{"journal deliveries ÷ fsyncs", medRange(ratio, 3)},
		{"journal deliveries ÷ " + datasyncName + "s", medRange(vsData, 3)},
		{"overlaps by hand/s", medRange(rates(overlaps), 0)},
		{"overlaps by hand ÷ fsyncs: the ceiling of an overlapping journal here", medRange(ceiling, 3)},
		{"journal deliveries ÷ overlaps by hand", medRange(vsOverlap, 3)},
		{"journal's own time per delivery (µs)", medRange(extra, 0)},
		{"one fsync (µs)", medRange(syncTime, 0)},
	})
	s.goal(ratioGoal("sender journal, serial deliveries/s ÷ the disk's fsyncs/s", median(ratio), ratio, journalGoal))
	s.headline("sender journal, serial deliveries ÷ the disk's fsync rate", "%s (goal ≥ %.1f; the same steps by hand with no journal: %.3f); journal's own time %.0f µs per delivery against %.0f µs per fsync",
		medRange(ratio, 3), journalGoal, median(ceiling), median(extra), median(syncTime))
	return nil
}
