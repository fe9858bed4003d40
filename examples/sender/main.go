// Command sender delivers GeoJSON features to a receiver, one delivery per
// feature, with the retry contract of package client.
//
// Usage:
//
//	go run ./examples/sender -url URL [-base 500ms] [-cap 30s] [-attempts 6]
//	    [-deadline 5m] [-dead-letter FILE] FILE...
//
// Each FILE (or "-" for standard input) holds GeoJSON: a FeatureCollection,
// a single Feature, or NDJSON with one Feature (or FeatureCollection) per
// line. Every input is read and checked before anything is sent; a file
// that does not parse stops the command before the first delivery.
//
// Each feature is sent as its own application/geo+json POST. Its
// idempotency key is client.FeatureKey of the feature as read: the SHA-256,
// in hex, of its compact JSON. So the same source feature gets the same key
// in every run, whether it came from a FeatureCollection or an NDJSON line,
// and two observations that differ in any member get different keys (the
// "id" alone would not do: it names the feature, not the observation). When
// the feature has no "observation_time" property, the sender sets it to the
// time it read the feature, once: every retry sends the same bytes, and a
// feature that appears twice in one run is sent twice with the same key and
// bytes (the receiver replays the first answer). Running the command again
// over a file without observation times stamps new ones: a receiver that
// already has those features refuses them as key reuse with another
// payload (422) instead of applying them twice. To re-send what failed,
// re-send the dead letters (their payload is the stamped bytes), not the
// source.
//
// On a terminal, a progress line shows how far it got. At the end it prints
// a summary (delivered, replayed, permanent failures, gave up,
// dead-lettered) and exits 0 only when every feature was delivered, 1
// otherwise, and 2 on usage errors. With -dead-letter, every feature that
// was not delivered is appended to FILE as a JSON line (client.DeadLetter),
// with its key and the exact bytes sent, ready to be sent again.
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
	usageHeader = "usage: sender -url URL [flags] FILE...\n\nDelivers every GeoJSON feature in FILE (FeatureCollection, Feature or NDJSON; - for stdin).\n\n"
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
	files          []string
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
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.files = fs.Args()
	var problems []error
	if o.url == "" {
		problems = append(problems, errors.New("-url is required"))
	} else if u, err := url.Parse(o.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		problems = append(problems, fmt.Errorf("-url %q is not an absolute http or https URL", o.url))
	}
	if len(o.files) == 0 {
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

	features, err := readInputs(o.files, o.url, clock)
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return exitFailed
	}

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
				res, err := sender.Deliver(ctx, f.delivery)
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

	fmt.Fprintf(stdout, "%d features to %s in %v\n", len(features), o.url, clock.Now().Sub(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "  delivered           %d\n", out.delivered)
	fmt.Fprintf(stdout, "    replayed          %d\n", out.replayed)
	fmt.Fprintf(stdout, "  permanent failures  %d\n", out.permanent)
	fmt.Fprintf(stdout, "  gave up             %d\n", out.gaveUp)
	if sink != nil {
		fmt.Fprintf(stdout, "  dead-lettered       %d (%s)\n", out.deadLettered, o.deadLetter)
	} else {
		fmt.Fprintf(stdout, "  dead-lettered       %d (no -dead-letter file)\n", out.deadLettered)
	}
	if out.delivered != len(features) || sinkFailed {
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
