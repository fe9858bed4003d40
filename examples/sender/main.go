// Command sender delivers GeoJSON features to a receiver, one delivery per
// feature, with the retry contract of package client, through a journal
// that makes a re-run, a crash and a re-drive safe.
//
// Usage:
//
//	go run ./examples/sender -url URL [-base 500ms] [-cap 30s] [-attempts 6]
//	    [-deadline 5m] [-dead-letter FILE] [-journal FILE] [-resend-permanent] FILE...
//	go run ./examples/sender -redrive DEAD-LETTERS [-dead-letter FILE] [-journal FILE]
//
// Each FILE (or "-" for standard input) holds GeoJSON: a FeatureCollection,
// a single Feature, or NDJSON with one Feature (or FeatureCollection) per
// line. Every input is read and checked before anything is sent; a file
// that does not parse stops the command before the first delivery.
//
// # What identifies an event
//
// Each feature is sent as its own application/geo+json POST. An event is
// the feature's bytes as first read: its idempotency key is
// geofeature.Key of the feature as read, the SHA-256, in hex, of its
// compact JSON, before any observation_time is stamped. So the same source
// feature gets the same key in every run, whether it came from a
// FeatureCollection or an NDJSON line, and two observations that differ in
// any member get different keys (the "id" alone would not do: it names the
// feature, not the observation).
//
// # The journal, and observation_time stamped once per event
//
// When the feature has no "observation_time" property, the sender sets it
// to the time it first read the feature, and records the key and the
// stamped bytes in the journal (-journal, default
// $XDG_STATE_HOME/geoidem/sender.journal, else
// ~/.local/state/geoidem/sender.journal): written before the first
// attempt, and synced to disk while that attempt runs, before anything
// else (a retry, a dead letter, the next feature). Every attempt, every later run over the same input and every
// re-drive sends the bytes the journal holds under that key, never a new
// stamp: a re-run with that journal (after a crash, a SIGKILL, or a run
// that ended) is a replay of what was delivered and a delivery of what
// was not, never a 422 for key reuse and never a second execution. The
// journal tells deliveries apart by key, URL and method: the same input
// sent to another -url is another delivery, stamped anew. It remembers a
// delivered event for 24 hours (the receiver's default retention); a run
// later than that stamps and records the event anew.
//
// # A re-run without the journal
//
// A run whose journal does not hold an event (the same file sent from
// another host or a new container, or after the journal was deleted)
// stamps it anew and sends the new bytes under the same key. The receiver,
// which holds the first send, keeps it and answers 422 key-reused; the
// sender counts that event as "sent earlier" (client.ErrSentEarlier): not
// a failure, not dead-lettered, never executed a second time, and no
// reason for a non-zero exit. The journal records it so, and a later run
// with this journal says the same. What holds, journal or not: the key of
// an event never changes, the receiver holds the first bytes sent under
// it (and so the first observation_time), and a re-run never turns a
// delivered event into a failure. What this run cannot tell is the
// receiver's answer to that first send (executed, or refused); the run
// that sent it reported it. Past the receiver's retention (24 hours by
// default) the receiver has forgotten the key too, and a re-sent event is
// executed as new.
//
// # Re-drive
//
// With -redrive FILE the command reads the dead letters of an earlier run
// (FILE is what -dead-letter wrote) and sends each again, byte for byte,
// under its original key, URL, method and headers: the receiver executes
// what it never executed and replays what it did. -url and input files are
// then not used.
//
// # Progress, failures and the summary
//
// On a terminal, a progress line shows how far it got; otherwise (a pipe,
// a log) a line "sender: progress: …" goes to stderr every -progress
// (default 10s; 0: never). While deliveries wait between attempts, the
// line says how many and why: "waiting 8 (retry-after 503 store-full)",
// the receiver's Retry-After and the answer that carried it, or
// "backoff 502" for the sender's own delay. A Retry-After is honoured,
// clamped to -max-retry-after; one that ends too late for an attempt
// before -deadline (a receiver whose store is full for a day) ends the
// delivery at once, with reason retry-after-beyond-deadline, instead of
// holding a worker until the deadline.
//
// Each feature not delivered is reported on stderr as it ends, with the
// receiver's answer (status, problem title and detail) and, when the
// problem document lists problems (a 422 invalid-geojson), each with its
// JSON pointer into the feature, the first five of them. At the end it
// prints a summary (delivered, replayed, sent earlier, not delivered by
// reason, in the words of the dead letters: permanent, exhausted,
// deadline, retry-after-beyond-deadline, budget, not-journaled;
// dead-lettered, still pending in the journal) and exits 0 only when
// every feature was delivered or sent earlier, 1 otherwise, and 2 on
// usage errors. With -dead-letter, every feature that was not delivered
// is appended to FILE as a JSON line (client.DeadLetter), with its key,
// the exact bytes sent and the headers, ready to be re-driven, unless FILE
// already holds a dead letter for the same key, URL and method (an
// earlier run's, or a re-drive's own input): the summary counts those as
// "already in it", and no delivery is in the file twice.
//
// # Failures on a re-run
//
// A re-run over the same input with the same journal does not send again
// a feature the journal records as refused permanently (the receiver
// answered its payload with a 4xx no retry can fix): it counts as
// permanent again, with 0 attempts and no new dead letter, and a note at
// the end names -resend-permanent, which sends such features again (once
// the receiver or its rules have changed). A feature that failed for now
// (exhausted, deadline, budget, ...) is sent again.
//
// # Stopping: SIGINT and SIGTERM
//
// The first SIGINT or SIGTERM stops the run cleanly: no new attempt is
// started (neither a first one nor a retry), the attempts in flight get
// -grace (default 10s; a second signal cuts them off at once) to finish,
// and their answers count. Whatever was not delivered is not dead-lettered
// (it did not fail): what was journaled stays pending in the journal, what
// was never started was not even recorded, and a re-run over the same
// input delivers both. The summary, printed once, counts them as
// "interrupted", and the command exits 130.
//
// # A full disk
//
// A feature is never sent before the journal has written it. When the
// journal cannot (a full disk), the feature is not sent and is appended
// to the -dead-letter file (reason "not-journaled", 0 attempts) with its
// key and bytes, to be re-driven once there is room; without -dead-letter
// it is only counted, and a re-run sends it. When the sync fails while
// the first attempt runs, a feature answered 2xx is delivered (the
// receiver holds it), and any other is not retried but dead-lettered so,
// after that 1 attempt; the journal takes no feature after a failed sync.
// The first such error is printed, the summary counts them all, and the
// command exits 3 (before 130, when it was interrupted too).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/client"
)

func main() {
	// The first SIGINT or SIGTERM stops the run (ctx), the second cuts
	// off the attempts in flight at once (hurry).
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	go func() {
		<-sig
		stop()
		<-sig
		close(hurry)
	}()
	code := app{hurry: hurry}.run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(code)
}

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	// exitNotJournaled: the journal could not record some features (a
	// full disk), which were therefore not sent; dead-lettered with
	// -dead-letter.
	exitNotJournaled = 3
	// exitInterrupted: stopped by SIGINT or SIGTERM (128+2, as a shell
	// reports a command killed by SIGINT); what was not delivered is left
	// for a re-run, not dead-lettered.
	exitInterrupted = 130
)

// app holds what tests replace: the clock, the HTTP client and the terminal
// check. Zero fields mean the real ones.
type app struct {
	clock       clock
	hc          *http.Client
	terminal    func(io.Writer) bool
	openJournal func(path string, cfg client.FileJournalConfig) (journal, error)
	// hurry, when closed after the stop, cuts off the attempts in flight
	// without waiting for -grace (a second SIGINT).
	hurry <-chan struct{}
}

// journal is what the command needs of its journal.
type journal interface {
	client.Journal
	Close() error
}

func openFileJournal(path string, cfg client.FileJournalConfig) (journal, error) {
	return client.OpenFileJournal(path, cfg)
}

// run is the command with its environment made explicit: ctx done is the
// stop (the first SIGINT or SIGTERM).
func (a app) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	now := time.Now
	if a.clock != nil {
		now = a.clock.Now
	}
	terminal := a.terminal
	if terminal == nil {
		terminal = isTerminal
	}

	var (
		features []feature
		target   = o.url
	)
	if o.redrive != "" {
		features, err = readDeadLetters(o.redrive)
		target = "their URLs"
	} else {
		features, err = readInputs(o.files, o.url, now)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return exitFailed
	}
	if err := os.MkdirAll(filepath.Dir(o.journal), 0o700); err != nil {
		fmt.Fprintf(stderr, "sender: journal: %v\n", err)
		return exitFailed
	}
	open := a.openJournal
	if open == nil {
		open = openFileJournal
	}
	var jcfg client.FileJournalConfig
	a.useClock(&jcfg)
	journal, err := open(o.journal, jcfg)
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return exitFailed
	}
	defer journal.Close()

	out := &outcome{total: len(features)}
	if terminal(stdout) {
		out.progress = stdout
	}
	var sink *deadLetterFile
	cfg := o.senderConfig()
	cfg.OnAttempt = out.waitStarts // the waits show on the progress line
	cfg.OnWaitEnd = out.waitEnds
	if o.deadLetter != "" {
		sink, err = openDeadLetterFile(o.deadLetter)
		if err != nil {
			fmt.Fprintf(stderr, "sender: %v\n", err)
			return exitFailed
		}
		defer sink.Close()
		cfg.DeadLetter = sink
	}
	a.useClock(&cfg)
	sender, err := client.New(a.hc, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return exitUsage
	}
	outbox := client.NewOutbox(sender, journal)

	start := now()

	// The stop: no new attempt, -grace for those in flight, then cut off.
	dctx, cutOff := context.WithCancel(context.WithoutCancel(ctx))
	defer cutOff()
	finished := make(chan struct{})
	var stopping sync.WaitGroup
	stopping.Go(func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		sender.Stop()
		out.printf(stderr, "sender: interrupted: no new attempts; waiting up to %v for the %d deliveries in flight (again to cut them off)\n",
			o.grace, out.inFlight.Load())
		t := time.NewTimer(o.grace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			cutOff()
		case <-a.hurry:
			cutOff()
		}
	})
	if out.progress == nil && o.progress > 0 {
		// Not on a terminal: a progress line now and then, for logs.
		stopping.Go(func() {
			t := time.NewTicker(o.progress)
			defer t.Stop()
			for {
				select {
				case <-finished:
					return
				case <-t.C:
					out.progressLine(stderr)
				}
			}
		})
	}

	jobs := make(chan feature)
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for f := range jobs {
				var (
					res client.Result
					err error
				)
				out.inFlight.Add(1)
				if f.redrive != nil {
					res, err = outbox.Redrive(dctx, *f.redrive)
				} else if o.resendPermanent {
					res, err = outbox.Resend(dctx, f.delivery)
				} else {
					res, err = outbox.Deliver(dctx, f.delivery)
				}
				out.inFlight.Add(-1)
				out.record(f, res, err, stderr)
			}
		})
	}
	started := 0
dispatch:
	for _, f := range features {
		select {
		case jobs <- f:
			started++
		case <-ctx.Done():
			break dispatch
		}
	}
	close(jobs)
	wg.Wait()
	close(finished)
	stopping.Wait()
	out.notStarted(len(features) - started)
	if out.progress != nil {
		fmt.Fprintln(stdout)
	}
	sinkFailed, deadLettered, already := false, 0, 0
	if sink != nil {
		deadLettered, already = sink.counts()
		if err := sink.Close(); err != nil {
			fmt.Fprintf(stderr, "sender: dead-letter file: %v\n", err)
			sinkFailed = true
		}
	}

	what := "features"
	if o.redrive != "" {
		what = "dead letters of " + o.redrive
	}
	how := ""
	if ctx.Err() != nil {
		how = " (interrupted)"
	}
	fmt.Fprintf(stdout, "%d %s to %s in %v%s\n", len(features), what, target, now().Sub(start).Round(time.Millisecond), how)
	out.summary(stdout)
	if sink != nil && already > 0 {
		fmt.Fprintf(stdout, "  dead-lettered       %d (%s; already in it: %d)\n", deadLettered+already, o.deadLetter, already)
	} else if sink != nil {
		fmt.Fprintf(stdout, "  dead-lettered       %d (%s)\n", deadLettered, o.deadLetter)
	} else {
		fmt.Fprintf(stdout, "  dead-lettered       %d (no -dead-letter file)\n", deadLettered)
	}
	pending, err := journal.Pending(context.WithoutCancel(ctx))
	if err != nil {
		fmt.Fprintf(stderr, "sender: journal: %v\n", err)
	}
	fmt.Fprintf(stdout, "  pending in journal  %d (%s)\n", len(pending), o.journal)
	if n := out.sentEarlier; n > 0 {
		fmt.Fprintf(stderr, "sender: %d features were sent earlier with another observation_time (by another host, or before the journal was deleted): the receiver answered 422 key-reused, keeps that first send and its answer, and executed none of them again\n", n)
	}
	if n := out.refusedEarlier; n > 0 {
		fmt.Fprintf(stderr, "sender: %d features were refused permanently by an earlier run (the journal %s says so) and not sent again; their dead letters are where that run wrote them; -resend-permanent sends them again\n", n, o.journal)
	}
	if n := out.interrupted; n > 0 {
		fmt.Fprintf(stderr, "sender: interrupted: %d features not delivered, none dead-lettered (%d pending in the journal); run again to deliver them\n", n, len(pending))
	}
	if n := out.failed["not-journaled"]; n > 0 {
		where := "none was dead-lettered (no -dead-letter file): run again once the journal can record, a re-run sends them"
		if sink != nil {
			where = fmt.Sprintf("they are in %s: re-drive it with -redrive %s once the journal can record", o.deadLetter, o.deadLetter)
		}
		fmt.Fprintf(stderr, "sender: the journal %s could not record %d features, so none of them was sent; %s\n", o.journal, n, where)
		return exitNotJournaled
	}
	if out.interrupted > 0 {
		return exitInterrupted
	}
	if out.delivered+out.sentEarlier != len(features) || sinkFailed || err != nil {
		return exitFailed
	}
	return exitOK
}
