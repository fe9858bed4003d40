package contracttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Outcome is how one rule ended in a [Report].
type Outcome string

// The outcomes of a rule.
const (
	Pass          Outcome = "pass"
	Fail          Outcome = "fail"
	NotApplicable Outcome = "not applicable" // the rule does not apply to the target, e.g. Target.SkipInvalidGeometry
	// Inconclusive: nothing the rule checked failed, but against this
	// receiver it could not have failed, e.g. RetryAfterIsHonoured against
	// a receiver that never replays (it answers 201 to everything), or
	// ReplayCarriesNoSetCookie against one that sets no cookie.
	Inconclusive Outcome = "inconclusive"
)

// RuleResult is one rule's outcome in a [Report].
type RuleResult struct {
	Name string `json:"name"`
	// Title is the rule for readers without Go, e.g. "missing key is 400"
	// for MissingKeyIs400.
	Title   string  `json:"title"`
	Outcome Outcome `json:"outcome"`
	// Failures are the rule's failure messages: each names the broken rule
	// ("RULE BROKEN: …") and shows the answers that broke it.
	Failures []string `json:"failures,omitempty"`
	// Reason says why the rule does not apply (NotApplicable) or why its
	// pass shows nothing (Inconclusive).
	Reason string `json:"reason,omitempty"`
	// Notes are what the rule logged: what it saw, and what it could not
	// show against this target.
	Notes   []string      `json:"notes,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Report is what [Check] found: every rule's outcome, in the order the
// rules ran.
type Report struct {
	// Endpoint is the URL the deliveries went to: Target.URL and Path.
	Endpoint string       `json:"endpoint"`
	Rules    []RuleResult `json:"rules"`
	// Diagnosis, when not empty, says what is likely wrong with the
	// target rather than with the rules: every answer was 404 (the URL),
	// or 401 or 403 (the credentials).
	Diagnosis string `json:"diagnosis,omitempty"`
}

// OK reports whether every rule that applies held: no rule's Outcome is
// Fail (an inconclusive rule did not fail).
func (r Report) OK() bool {
	for _, res := range r.Rules {
		if res.Outcome == Fail {
			return false
		}
	}
	return true
}

// ErrUnreachable is wrapped by the error [Check] returns when nothing
// accepts a connection at Target.URL.
var ErrUnreachable = errors.New("contracttest: the target is unreachable")

// Check checks every rule of the contract against target, one after
// another, and returns a Report: the same rules, with the same messages, as
// [Run], for callers without a *testing.T (the geoidem command's contract
// subcommand, a CI job checking a deployed receiver). It returns an error,
// and no report, when target is unusable (see Run) or, for a Target.URL,
// when nothing accepts a TCP connection there; a rule broken is not an
// error. Cancelling ctx cuts the running rule short (it then fails) and
// the rest fail at once.
func Check(ctx context.Context, target Target) (Report, error) {
	s, err := newSuite(target)
	if err != nil {
		return Report{}, err
	}
	defer s.close()
	if target.URL != "" {
		if err := reachable(ctx, s.base); err != nil {
			return Report{}, err
		}
	}
	rep := Report{Endpoint: s.endpoint()}
	rules := s.rules()
	for _, r := range rules {
		rt := newRuleT(ctx, "contract/"+r.name)
		start := time.Now()
		rt.do(r.fn)
		res := RuleResult{Name: r.name, Title: r.title, Failures: rt.failures, Notes: rt.logs, Elapsed: time.Since(start)}
		switch {
		case rt.failed:
			res.Outcome = Fail
		case rt.skipped:
			res.Outcome, res.Reason = NotApplicable, rt.skipReason
		case rt.inconclusiveReason != "":
			res.Outcome, res.Reason = Inconclusive, rt.inconclusiveReason
		default:
			res.Outcome = Pass
		}
		rep.Rules = append(rep.Rules, res)
	}
	// Whether the receiver ever replays is known only once every rule ran.
	if !s.seen.replayed() {
		for i, r := range rules {
			if r.needsReplays && rep.Rules[i].Outcome == Pass {
				rep.Rules[i].Outcome, rep.Rules[i].Reason = Inconclusive, noReplays
			}
		}
	}
	rep.Diagnosis = s.seen.diagnosis()
	return rep, nil
}

// reachable dials base's host, sending nothing.
func reachable(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := new(net.Dialer).DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return c.Close()
}

// tester is what a rule needs of the test it runs in: a *testing.T (in
// Run, through testingT) or a ruleT (in Check).
type tester interface {
	Helper()
	Name() string
	Context() context.Context
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Skip(args ...any)
	// inconclusive notes that the rule, should nothing it checks fail,
	// showed nothing of this receiver (it could not have failed here), and
	// why: Check reports it Inconclusive; under go test it is logged.
	inconclusive(reason string)
	// run runs f as a subtest named name, as testing.T.Run does.
	run(name string, f func(t tester)) bool
}

// testingT is a *testing.T as a tester.
type testingT struct{ *testing.T }

func (t testingT) inconclusive(reason string) { t.Logf("inconclusive: %s", reason) }

func (t testingT) run(name string, f func(t tester)) bool {
	return t.T.Run(name, func(t *testing.T) { f(testingT{t}) })
}

// ruleT is a tester that records what a rule reports, for Check. Like a
// *testing.T, Fatalf and Skip end the rule's goroutine, so a rule runs in a
// goroutine of its own (do).
type ruleT struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	failed     bool
	skipped    bool
	skipReason string
	// inconclusiveReason is set by inconclusive.
	inconclusiveReason string
	failures           []string
	logs               []string
	cleanups           []func()
}

func newRuleT(ctx context.Context, name string) *ruleT {
	ctx, cancel := context.WithCancel(ctx)
	return &ruleT{name: name, ctx: ctx, cancel: cancel}
}

// do runs f in a goroutine of its own and waits for it; then, as testing
// does, it cancels the rule's context and runs its cleanups, last first.
// A panic in f fails the rule.
func (t *ruleT) do(f func(t tester)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("contracttest: the rule panicked: %v", v)
			}
		}()
		f(t)
	}()
	<-done
	t.cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

func (t *ruleT) Helper()                  {}
func (t *ruleT) Name() string             { return t.name }
func (t *ruleT) Context() context.Context { return t.ctx }

func (t *ruleT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *ruleT) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	t.failures = append(t.failures, fmt.Sprintf(format, args...))
}

func (t *ruleT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}

func (t *ruleT) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.logs = append(t.logs, fmt.Sprintf(format, args...))
}

func (t *ruleT) inconclusive(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inconclusiveReason = reason
}

func (t *ruleT) Skip(args ...any) {
	t.mu.Lock()
	t.skipped, t.skipReason = true, strings.TrimSuffix(fmt.Sprintln(args...), "\n")
	t.mu.Unlock()
	runtime.Goexit()
}

// run runs f as a subtest: its failures and notes join t's, prefixed with
// the subtest's name.
func (t *ruleT) run(name string, f func(t tester)) bool {
	sub := newRuleT(t.ctx, t.name+"/"+name)
	sub.do(f)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range sub.failures {
		t.failures = append(t.failures, name+": "+m)
	}
	if sub.inconclusiveReason != "" {
		t.inconclusiveReason = name + ": " + sub.inconclusiveReason
	}
	for _, m := range sub.logs {
		t.logs = append(t.logs, name+": "+m)
	}
	if sub.skipped && !sub.failed {
		t.logs = append(t.logs, name+": not applicable: "+sub.skipReason)
	}
	t.failed = t.failed || sub.failed
	return !sub.failed
}
