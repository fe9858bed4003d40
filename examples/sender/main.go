// Command sender delivers GeoJSON features to a receiver, one delivery per
// feature, with the retry contract of package client, through a journal
// that makes a re-run, a crash and a re-drive safe.
//
// Usage:
//
//	go run ./examples/sender -url URL [-base 500ms] [-cap 30s] [-attempts 6]
//	    [-deadline 5m] [-dead-letter FILE] [-journal FILE] FILE...
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
// client.FeatureKey of the feature as read, the SHA-256, in hex, of its
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
// ~/.local/state/geoidem/sender.journal), synced to disk, before the first
// attempt. Every attempt, every later run over the same input and every
// re-drive sends the bytes the journal holds under that key, never a new
// stamp: a re-run (after a crash, a SIGKILL, or a run that ended) is a
// replay of what was delivered and a delivery of what was not, never a 422
// for key reuse and never a second execution. The journal tells deliveries
// apart by key, URL and method: the same input sent to another -url is
// another delivery, stamped anew. It remembers a delivered event for 24
// hours (the receiver's default retention); a run later than that stamps
// and records the event anew.
//
// # Re-drive
//
// With -redrive FILE the command reads the dead letters of an earlier run
// (FILE is what -dead-letter wrote) and sends each again, byte for byte,
// under its original key, URL, method and headers: the receiver executes
// what it never executed and replays what it did. -url and input files are
// then not used.
//
// On a terminal, a progress line shows how far it got. At the end it prints
// a summary (delivered, replayed, permanent failures, gave up,
// dead-lettered, still pending in the journal) and exits 0 only when every
// feature was delivered, 1 otherwise, and 2 on usage errors. With
// -dead-letter, every feature that was not delivered is appended to FILE as
// a JSON line (client.DeadLetter), with its key, the exact bytes sent and
// the headers, ready to be re-driven.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	usageHeader = "usage: sender -url URL [flags] FILE...\n       sender -redrive DEAD-LETTERS [flags]\n\nDelivers every GeoJSON feature in FILE (FeatureCollection, Feature or NDJSON; - for stdin),\nor re-drives the dead letters of an earlier run.\n\n"
)

// run is the command with its environment made explicit.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return app{}.run(ctx, args, stdout, stderr)
}

// app holds what tests replace: the clock, the HTTP client and the terminal
// check. Zero fields mean the real ones.
type app struct {
	clock    client.Clock
	hc       *http.Client
	terminal func(io.Writer) bool
}

// options are the parsed flags.
type options struct {
	url            string
	backoff        client.Backoff
	attempts       int
	deadline       time.Duration
	attemptTimeout time.Duration
	maxRetryAfter  time.Duration
	concurrency    int
	deadLetter     string
	journal        string
	redrive        string
	files          []string
}

// defaultJournal is where the journal lives unless -journal says
// otherwise: $XDG_STATE_HOME/geoidem/sender.journal, else
// ~/.local/state/geoidem/sender.journal.
func defaultJournal() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "geoidem", "sender.journal")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "geoidem", "sender.journal")
	}
	return "geoidem-sender.journal"
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("sender", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHeader)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.url, "url", "", "receiver `URL` to POST each feature to (required)")
	fs.DurationVar(&o.backoff.Base, "base", client.DefaultBase, "backoff base delay")
	fs.DurationVar(&o.backoff.Cap, "cap", client.DefaultCap, "backoff cap")
	fs.TextVar(&o.backoff.Strategy, "strategy", client.Decorrelated, "backoff `strategy`: decorrelated, full, equal, exponential or none")
	fs.IntVar(&o.attempts, "attempts", client.DefaultMaxAttempts, "attempts per feature, the first included")
	fs.DurationVar(&o.deadline, "deadline", client.DefaultDeadline, "deadline per feature, all attempts included")
	fs.DurationVar(&o.attemptTimeout, "attempt-timeout", client.DefaultAttemptTimeout, "timeout of one attempt")
	fs.DurationVar(&o.maxRetryAfter, "max-retry-after", client.DefaultMaxRetryAfter, "longest Retry-After honoured")
	fs.IntVar(&o.concurrency, "concurrency", 1, "features delivered at once")
	fs.StringVar(&o.deadLetter, "dead-letter", "", "append undelivered features to `FILE` (JSON lines)")
	fs.StringVar(&o.journal, "journal", defaultJournal(), "the journal `FILE`: key and bytes of every event, recorded before its first attempt")
	fs.StringVar(&o.redrive, "redrive", "", "re-send the dead letters in `FILE` under their original keys, byte for byte")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.files = fs.Args()
	var problems []error
	switch {
	case o.redrive != "" && len(o.files) > 0:
		problems = append(problems, errors.New("-redrive takes no input FILE"))
	case o.redrive != "":
	case o.url == "":
		problems = append(problems, errors.New("-url is required"))
	}
	if o.journal == "" {
		problems = append(problems, errors.New("-journal is required"))
	}
	if u, err := url.Parse(o.url); o.url != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		problems = append(problems, fmt.Errorf("-url %q is not an absolute http or https URL", o.url))
	}
	if len(o.files) == 0 && o.redrive == "" {
		problems = append(problems, errors.New("no input FILE"))
	}
	if o.attempts < 1 {
		problems = append(problems, fmt.Errorf("-attempts %d: want at least 1", o.attempts))
	}
	if o.backoff.Base <= 0 {
		problems = append(problems, fmt.Errorf("-base %v: want a positive duration", o.backoff.Base))
	}
	if err := o.backoff.Validate(); err != nil {
		problems = append(problems, err)
	}
	if o.deadline <= 0 || o.attemptTimeout <= 0 || o.maxRetryAfter <= 0 {
		problems = append(problems, errors.New("-deadline, -attempt-timeout and -max-retry-after must be positive"))
	}
	if o.concurrency < 1 {
		problems = append(problems, fmt.Errorf("-concurrency %d: want at least 1", o.concurrency))
	}
	if err := errors.Join(problems...); err != nil {
		fmt.Fprintf(stderr, "sender: %v\n\n", err)
		fs.Usage()
		return o, err
	}
	return o, nil
}

// feature is one feature to deliver.
type feature struct {
	source   string // file:line or file:line#index, for messages
	delivery client.Delivery
	redrive  *client.DeadLetter // a dead letter to re-drive instead
}

// outcome tallies the deliveries.
type outcome struct {
	total    int
	progress io.Writer // the terminal, or nil for no progress line

	mu                              sync.Mutex
	done, delivered, replayed       int
	permanent, gaveUp, deadLettered int
}

// countingSink counts the dead letters its file took.
type countingSink struct {
	*client.JSONLinesSink
	n atomic.Int64
}

// Put writes dl and counts it if the write succeeded.
func (s *countingSink) Put(ctx context.Context, dl client.DeadLetter) error {
	err := s.JSONLinesSink.Put(ctx, dl)
	if err == nil {
		s.n.Add(1)
	}
	return err
}

func (a app) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	clock := a.clock
	if clock == nil {
		clock = client.SystemClock{}
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
		features, err = readInputs(o.files, o.url, clock)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return exitFailed
	}
	if err := os.MkdirAll(filepath.Dir(o.journal), 0o700); err != nil {
		fmt.Fprintf(stderr, "sender: journal: %v\n", err)
		return exitFailed
	}
	journal, err := client.OpenFileJournal(o.journal, client.FileJournalConfig{Clock: clock})
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return exitFailed
	}
	defer journal.Close()

	var sink *countingSink
	cfg := client.Config{
		Backoff:        o.backoff,
		MaxAttempts:    o.attempts,
		Deadline:       o.deadline,
		AttemptTimeout: o.attemptTimeout,
		MaxRetryAfter:  o.maxRetryAfter,
		Clock:          clock,
	}
	if o.deadLetter != "" {
		file, err := client.OpenJSONLinesFile(o.deadLetter)
		if err != nil {
			fmt.Fprintf(stderr, "sender: %v\n", err)
			return exitFailed
		}
		defer file.Close()
		sink = &countingSink{JSONLinesSink: file}
		cfg.DeadLetter = sink
	}
	sender, err := client.New(a.hc, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return exitUsage
	}
	outbox := client.NewOutbox(sender, journal)

	start := clock.Now()
	out := &outcome{total: len(features)}
	if terminal(stdout) {
		out.progress = stdout
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
				if f.redrive != nil {
					res, err = outbox.Redrive(ctx, *f.redrive)
				} else {
					res, err = outbox.Deliver(ctx, f.delivery)
				}
				out.record(f, res, err, stderr)
			}
		})
	}
	for _, f := range features {
		jobs <- f
	}
	close(jobs)
	wg.Wait()
	if out.progress != nil {
		fmt.Fprintln(stdout)
	}
	sinkFailed := false
	if sink != nil {
		out.deadLettered = int(sink.n.Load())
		if err := sink.Close(); err != nil {
			fmt.Fprintf(stderr, "sender: dead-letter file: %v\n", err)
			sinkFailed = true
		}
	}

	what := "features"
	if o.redrive != "" {
		what = "dead letters of " + o.redrive
	}
	fmt.Fprintf(stdout, "%d %s to %s in %v\n", len(features), what, target, clock.Now().Sub(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "  delivered           %d\n", out.delivered)
	fmt.Fprintf(stdout, "    replayed          %d\n", out.replayed)
	fmt.Fprintf(stdout, "  permanent failures  %d\n", out.permanent)
	fmt.Fprintf(stdout, "  gave up             %d\n", out.gaveUp)
	if sink != nil {
		fmt.Fprintf(stdout, "  dead-lettered       %d (%s)\n", out.deadLettered, o.deadLetter)
	} else {
		fmt.Fprintf(stdout, "  dead-lettered       %d (no -dead-letter file)\n", out.deadLettered)
	}
	pending, err := journal.Pending(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "sender: journal: %v\n", err)
	}
	fmt.Fprintf(stdout, "  pending in journal  %d (%s)\n", len(pending), o.journal)
	if out.delivered != len(features) || sinkFailed || err != nil {
		return exitFailed
	}
	return exitOK
}

// record counts one finished delivery, reports a failure on stderr and
// redraws the progress line.
func (o *outcome) record(f feature, res client.Result, err error, stderr io.Writer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done++
	switch {
	case err == nil:
		o.delivered++
		if res.Replayed {
			o.replayed++
		}
	case errors.Is(err, client.ErrPermanent):
		o.permanent++
	default:
		o.gaveUp++
	}
	if err != nil {
		if o.progress != nil {
			fmt.Fprint(o.progress, "\r\033[K") // clear the progress line first
		}
		fmt.Fprintf(stderr, "sender: %s: %v\n", f.source, err)
	}
	if o.progress != nil {
		fmt.Fprintf(o.progress, "\r\033[K%d/%d  delivered %d (replayed %d)  failed %d",
			o.done, o.total, o.delivered, o.replayed, o.permanent+o.gaveUp)
	}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// readInputs reads every file and returns its features, each with its key
// and its stamped body. The first feature with a given key fixes the body
// for every later one, so a duplicate in the input is a replay, not a
// conflict.
func readInputs(files []string, target string, clock client.Clock) ([]feature, error) {
	var out []feature
	bodies := make(map[string][]byte)
	for _, name := range files {
		data, err := readFile(name)
		if err != nil {
			return nil, err
		}
		raws, err := splitFeatures(name, data)
		if err != nil {
			return nil, err
		}
		for _, r := range raws {
			d, err := client.NewFeatureDelivery(target, r.raw, clock.Now())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.source, err)
			}
			if b, ok := bodies[d.Key]; ok {
				d.Body = b
			} else {
				bodies[d.Key] = d.Body
			}
			out = append(out, feature{source: r.source, delivery: d})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no features in the input")
	}
	return out, nil
}

// readDeadLetters reads the dead letters to re-drive.
func readDeadLetters(name string) ([]feature, error) {
	data, err := readFile(name)
	if err != nil {
		return nil, err
	}
	dls, err := client.ReadDeadLetters(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(dls) == 0 {
		return nil, fmt.Errorf("%s: no dead letters", name)
	}
	out := make([]feature, len(dls))
	for i := range dls {
		out[i] = feature{source: fmt.Sprintf("%s: dead letter %d (key %s)", name, i+1, dls[i].Key), redrive: &dls[i]}
	}
	return out, nil
}

func readFile(name string) ([]byte, error) {
	if name == "-" {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("stdin: %w", err)
		}
		return data, nil
	}
	return os.ReadFile(name)
}

// rawFeature is one feature as read.
type rawFeature struct {
	source string
	raw    []byte
}

// splitFeatures splits a file's JSON values (one, or one per NDJSON line)
// into features.
func splitFeatures(name string, data []byte) ([]rawFeature, error) {
	var out []rawFeature
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		offset := dec.InputOffset()
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		// The value starts at the first non-space byte after offset.
		line := 1 + bytes.Count(data[:offset], []byte("\n")) + bytes.Count(leadingSpace(data[offset:]), []byte("\n"))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		source := fmt.Sprintf("%s:%d", name, line)
		var head struct {
			Type     string            `json:"type"`
			Features []json.RawMessage `json:"features"`
		}
		if err := json.Unmarshal(v, &head); err != nil {
			return nil, fmt.Errorf("%s: not a GeoJSON object: %w", source, err)
		}
		switch head.Type {
		case "Feature":
			out = append(out, rawFeature{source, v})
		case "FeatureCollection":
			for i, f := range head.Features {
				out = append(out, rawFeature{fmt.Sprintf("%s#%d", source, i), f})
			}
		default:
			return nil, fmt.Errorf("%s: type %q: want a Feature or a FeatureCollection", source, head.Type)
		}
	}
}

func leadingSpace(b []byte) []byte {
	return b[:len(b)-len(bytes.TrimLeft(b, " \t\r\n"))]
}
