package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/client"
)

// With -kill-sender N the first pass runs in a child process, this same
// program in a hidden -run-sender mode: the paired senders deliver through
// a client.Outbox whose FileJournal records each key and body before the
// first attempt. The parent SIGKILLs the child N times at seeded points of
// its journal and runs it again over the same jobs each time, then once to
// the end. The dead letters it wrote go to the re-drive, and the journal
// must end with nothing pending.

// senderJob is one line of the jobs file a -run-sender child reads.
type senderJob struct {
	Key  string          `json:"key"`
	Body json.RawMessage `json:"body"`
}

// tallyPrefix starts the line a -run-sender child prints at its end, with
// its attempt counts.
const tallyPrefix = "chaos sender tally: "

// runSenderChild is the hidden -run-sender mode.
func runSenderChild(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("chaos -run-sender", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		jobsFile, url, journalFile, deadFile string
		senders, attempts                    int
		seed                                 uint64
	)
	fl.StringVar(&jobsFile, "jobs", "", "jobs file (JSON lines)")
	fl.StringVar(&url, "url", "", "where to POST")
	fl.StringVar(&journalFile, "journal", "", "journal file")
	fl.StringVar(&deadFile, "dead-letter", "", "dead-letter file")
	fl.IntVar(&senders, "senders", 4, "concurrent senders")
	fl.IntVar(&attempts, "attempts", 4, "attempts per delivery")
	fl.Uint64Var(&seed, "seed", 1, "jitter seed")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	data, err := os.ReadFile(jobsFile)
	if err != nil {
		fmt.Fprintf(stderr, "chaos sender: %v\n", err)
		return 1
	}
	var jobs []senderJob
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var j senderJob
		if err := json.Unmarshal(line, &j); err != nil {
			fmt.Fprintf(stderr, "chaos sender: jobs: %v\n", err)
			return 1
		}
		jobs = append(jobs, j)
	}
	journal, err := client.OpenFileJournal(journalFile, client.FileJournalConfig{})
	if err != nil {
		fmt.Fprintf(stderr, "chaos sender: %v\n", err)
		return 1
	}
	defer journal.Close()
	sink, err := client.OpenJSONLinesFile(deadFile)
	if err != nil {
		fmt.Fprintf(stderr, "chaos sender: %v\n", err)
		return 1
	}
	defer sink.Close()
	var t tally
	ss, closeIdle, err := newSenders(senders, attempts, seed, &t, sink, false)
	if err != nil {
		fmt.Fprintf(stderr, "chaos sender: %v\n", err)
		return 1
	}
	defer closeIdle()
	queue := make(chan senderJob)
	var wg sync.WaitGroup
	for _, s := range ss {
		ob := client.NewOutbox(s, journal)
		wg.Go(func() {
			for j := range queue {
				_, _ = ob.Deliver(ctx, client.Delivery{URL: url, Key: j.Key, Body: j.Body, ContentType: "application/geo+json"})
			}
		})
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	wg.Wait()
	fmt.Fprintf(stdout, "%s%d %d %d %d %d %d\n", tallyPrefix, t.attempts.Load(), t.replays.Load(), t.conflicts.Load(),
		t.invalid.Load(), t.unavailable.Load(), t.netErrors.Load())
	return 0
}

// killedSenderPass runs the first pass in -run-sender children, killing
// kills of them at seeded points of the journal, and returns how many
// kills landed, and how many journal entries are pending at the end. The
// attempts of the last, complete run go to t; its dead letters to dl.
func killedSenderPass(ctx context.Context, o options, proxyURL string, jobs []*event, t *tally, dl *deadLetters, acked *acks, stderr io.Writer) (landed, pending int, err error) {
	exe, err := executable()
	if err != nil {
		return 0, 0, err
	}
	dir, err := os.MkdirTemp("", "geoidem-chaos-sender-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range jobs {
		if err := enc.Encode(senderJob{Key: e.key, Body: e.body}); err != nil {
			return 0, 0, err
		}
	}
	jobsFile, journal, dead := filepath.Join(dir, "jobs"), filepath.Join(dir, "journal"), filepath.Join(dir, "dead.jsonl")
	if err := os.WriteFile(jobsFile, buf.Bytes(), 0o600); err != nil {
		return 0, 0, err
	}
	args := []string{"-run-sender", "-jobs", jobsFile, "-url", proxyURL + "/features", "-journal", journal,
		"-dead-letter", dead, "-senders", fmt.Sprint(o.senders), "-attempts", fmt.Sprint(o.attempts)}

	rng := rand.New(rand.NewPCG(o.seed, 0x5e4d))
	for k := range o.killSender {
		// Each run writes a line per job at least, so this lands mid-run.
		at := journalLines(journal) + 1 + rng.IntN(len(jobs))
		cmd := exec.CommandContext(ctx, exe, append(args, "-seed", fmt.Sprint(o.seed+uint64(k)))...)
		cmd.Stdout, cmd.Stderr = io.Discard, stderr
		killed, err := runUntilLine(ctx, cmd, journal, at)
		if err != nil {
			return landed, 0, err
		}
		if killed {
			landed++
		}
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, append(args, "-seed", fmt.Sprint(o.seed+uint64(o.killSender)))...)
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return landed, 0, fmt.Errorf("the sender's last run: %w", err)
	}
	addTally(t, out.String())

	data, err := os.ReadFile(dead)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return landed, 0, err
	}
	dls, err := client.ReadDeadLetters(bytes.NewReader(data))
	if err != nil {
		return landed, 0, err
	}
	for _, d := range dls {
		_ = dl.Put(ctx, d)
	}
	j, err := client.OpenFileJournal(journal, client.FileJournalConfig{})
	if err != nil {
		return landed, 0, err
	}
	defer j.Close()
	for _, e := range j.Entries() { // what the child's senders saw acknowledged
		if e.Outcome == client.OutcomeDelivered || e.Outcome == client.OutcomeReplayed {
			acked.add(e.Key)
		}
	}
	p, err := j.Pending(ctx)
	return landed, len(p), err
}

// runUntilLine runs cmd and SIGKILLs it once the journal has at lines. It
// reports whether the kill landed (false: the child ended first).
func runUntilLine(ctx context.Context, cmd *exec.Cmd, journal string, at int) (bool, error) {
	if err := cmd.Start(); err != nil {
		return false, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return false, err
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			return false, ctx.Err()
		case <-tick.C:
		}
		if journalLines(journal) >= at {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			return true, nil
		}
	}
}

// journalLines counts the journal's lines (0 before it exists).
func journalLines(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte("\n"))
}

// addTally adds the counts a child printed to t.
func addTally(t *tally, out string) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), tallyPrefix)
		if !ok {
			continue
		}
		var a, r, c, i, u, n int64
		if _, err := fmt.Sscan(rest, &a, &r, &c, &i, &u, &n); err == nil {
			t.attempts.Add(a)
			t.replays.Add(r)
			t.conflicts.Add(c)
			t.invalid.Add(i)
			t.unavailable.Add(u)
			t.netErrors.Add(n)
		}
	}
}
