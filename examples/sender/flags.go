package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/geoidem/geoidem/client"
)

// usageHeader opens the usage message, before the flags.
const usageHeader = "usage: sender -url URL [flags] FILE...\n       sender -redrive DEAD-LETTERS [flags]\n\nDelivers every GeoJSON feature in FILE (FeatureCollection, Feature or NDJSON; - for stdin),\nor re-drives the dead letters of an earlier run.\n\n"

// options are the parsed flags.
type options struct {
	url             string
	backoff         client.Backoff
	attempts        int
	deadline        time.Duration
	attemptTimeout  time.Duration
	maxRetryAfter   time.Duration
	concurrency     int
	deadLetter      string
	journal         string
	redrive         string
	resendPermanent bool
	grace           time.Duration
	progress        time.Duration
	files           []string
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
	fs.DurationVar(&o.backoff.Base, "base", 0, "backoff base delay (0: the client's default, 500ms)")
	fs.DurationVar(&o.backoff.Cap, "cap", 0, "backoff cap (0: the client's default, 30s)")
	fs.TextVar(&o.backoff.Strategy, "strategy", client.Decorrelated, "backoff `strategy`: decorrelated, full, equal, exponential or none")
	fs.IntVar(&o.attempts, "attempts", 0, "attempts per feature, the first included (0: the client's default, 6)")
	fs.DurationVar(&o.deadline, "deadline", 0, "deadline per feature, all attempts included (0: the client's default, 5m)")
	fs.DurationVar(&o.attemptTimeout, "attempt-timeout", 0, "timeout of one attempt (0: the client's default, 15s)")
	fs.DurationVar(&o.maxRetryAfter, "max-retry-after", 0, "longest wait for a Retry-After (a longer one is clamped; one beyond -deadline ends the delivery at once) (0: the client's default, 1m)")
	fs.IntVar(&o.concurrency, "concurrency", 1, "features delivered at once")
	fs.StringVar(&o.deadLetter, "dead-letter", "", "append undelivered features to `FILE` (JSON lines)")
	fs.StringVar(&o.journal, "journal", defaultJournal(), "the journal `FILE`: key and bytes of every event, recorded before its first attempt")
	fs.StringVar(&o.redrive, "redrive", "", "re-send the dead letters in `FILE` under their original keys, byte for byte")
	fs.BoolVar(&o.resendPermanent, "resend-permanent", false, "send again the features the journal records as refused permanently by an earlier run (by default they are counted as permanent and not sent)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "on SIGINT or SIGTERM: how long the attempts in flight may take before they are cut off (nothing new starts)")
	fs.DurationVar(&o.progress, "progress", 10*time.Second, "when the output is not a terminal: print a progress line to stderr this often (0: never)")
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
	if o.attempts < 0 {
		problems = append(problems, fmt.Errorf("-attempts %d: want at least 1, or 0 for the default", o.attempts))
	}
	if o.backoff.Base < 0 || o.backoff.Cap < 0 {
		problems = append(problems, errors.New("-base and -cap must not be negative"))
	}
	if o.deadline < 0 || o.attemptTimeout < 0 || o.maxRetryAfter < 0 {
		problems = append(problems, errors.New("-deadline, -attempt-timeout and -max-retry-after must not be negative"))
	}
	if len(problems) == 0 {
		// The sender's own check: a cap below the base, say.
		if _, err := client.New(nil, o.senderConfig()); err != nil {
			problems = append(problems, err)
		}
	}
	if o.grace < 0 || o.progress < 0 {
		problems = append(problems, errors.New("-grace and -progress must not be negative"))
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

// senderConfig is the sender's configuration the flags give; a zero field
// is the client's default.
func (o options) senderConfig() client.Config {
	return client.Config{
		Backoff:        o.backoff,
		MaxAttempts:    o.attempts,
		Deadline:       o.deadline,
		AttemptTimeout: o.attemptTimeout,
		MaxRetryAfter:  o.maxRetryAfter,
	}
}
