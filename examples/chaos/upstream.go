package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/geoidem/geoidem/client"
)

// The -upstream row: `geoidem proxy` in front of a receiver in another
// language (examples/aiohttp/receiver.py, which does no idempotency of its
// own unless --dedup), the receiver killed in the middle of requests:
// before its work (nothing done), or after it and before its answer (the
// work done, the answer lost), and restarted on its port at once. Four
// runs, one per configuration:
//
//	hold     the proxy's default: an outcome it cannot know (the connection
//	         lost after the request was sent) holds the key as uncertain
//	release  -uncertain-hold 0: the key is released, as a reverse proxy
//	         wrapped in the middleware does for any 502
//
// each against the receiver without and with --dedup (deduplicating its
// own effects by the forwarded Idempotency-Key). Each run delivers -events
// events with paired senders, stops the kills, re-drives the dead letters
// once, and then does what an operator does with the keys still held as
// uncertain: checks the receiver (its runs file) and runs `geoidem keys
// release` for each that did not run, then re-drives those. It counts, from
// the receiver's durable runs file, the events run twice and the events
// lost (never run), before and after that operator step.

// upstreamOptions are the -upstream row's flags.
type upstreamOptions struct {
	events, senders         int
	seed                    uint64
	dieBefore, dieAfter     float64
	geoidem, receiverScript string
}

// upstreamRow is one configuration's counts.
type upstreamRow struct {
	mode             string // hold or release
	dedup            bool
	deaths           int // receiver processes that died in a request
	uncertain        int // upstream calls the proxy told as uncertain
	deadLettered     int // deliveries the senders gave up, first pass
	heldAfterRedrive int // keys still held as uncertain after the re-drive
	twice, lost      int // after the re-drive
	released         int // keys the operator released (they had not run)
	twiceAfter       int // after the operator's step
	lostAfter        int
}

func upstreamChaos(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("chaos -upstream", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o upstreamOptions
	fl.IntVar(&o.events, "events", 200, "events to deliver in each configuration")
	fl.IntVar(&o.senders, "senders", 4, "concurrent senders")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the kills and the senders' jitter")
	fl.Float64Var(&o.dieBefore, "die-before", 0.03, "probability that the receiver dies on a request before its work")
	fl.Float64Var(&o.dieAfter, "die-after", 0.05, "probability that it dies after its work, before its answer")
	fl.StringVar(&o.geoidem, "geoidem", "", "the geoidem binary (default: built from this checkout)")
	fl.StringVar(&o.receiverScript, "receiver", "", "the aiohttp receiver (default: examples/aiohttp/receiver.py of this checkout)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	rows, err := runUpstreamChaos(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "chaos -upstream: %v\n", err)
		return 1
	}
	return reportUpstream(stdout, o, rows)
}

// runUpstreamChaos runs the four configurations.
func runUpstreamChaos(ctx context.Context, o upstreamOptions, stderr io.Writer) ([]upstreamRow, error) {
	dir, err := os.MkdirTemp("", "chaos-upstream-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if o.geoidem == "" {
		o.geoidem = filepath.Join(dir, "geoidem")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", o.geoidem, "github.com/geoidem/geoidem/cmd/geoidem").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building geoidem: %v\n%s", err, out)
		}
	}
	if o.receiverScript == "" {
		for _, p := range []string{"aiohttp/receiver.py", "examples/aiohttp/receiver.py", "../aiohttp/receiver.py"} {
			if _, err := os.Stat(p); err == nil {
				o.receiverScript = p
				break
			}
		}
		if o.receiverScript == "" {
			return nil, errors.New("examples/aiohttp/receiver.py not found from here: pass -receiver")
		}
	}
	var rows []upstreamRow
	for _, mode := range []string{"hold", "release"} {
		for _, dedup := range []bool{false, true} {
			row, err := upstreamRun(ctx, o, filepath.Join(dir, fmt.Sprintf("%s-%t", mode, dedup)), mode, dedup, stderr)
			if err != nil {
				return nil, fmt.Errorf("%s, dedup %t: %w", mode, dedup, err)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// upstreamRun runs one configuration.
func upstreamRun(ctx context.Context, o upstreamOptions, dir, mode string, dedup bool, stderr io.Writer) (upstreamRow, error) {
	row := upstreamRow{mode: mode, dedup: dedup}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return row, err
	}
	port, err := spareLoopbackPort()
	if err != nil {
		return row, err
	}
	runsFile := filepath.Join(dir, "runs.jsonl")
	rcv := &supervised{args: []string{o.receiverScript, "--port", port, "--runs", runsFile}, stderr: stderr}
	if dedup {
		rcv.args = append(rcv.args, "--dedup")
	}
	faults := []string{"--die-before", fmt.Sprint(o.dieBefore), "--die-after", fmt.Sprint(o.dieAfter)}
	if err := rcv.start(ctx, faults, o.seed); err != nil {
		return row, err
	}
	defer rcv.stop()

	adminPort, err := spareLoopbackPort()
	if err != nil {
		return row, err
	}
	admin := "http://127.0.0.1:" + adminPort
	hold := "1h"
	if mode == "release" {
		hold = "0"
	}
	proxyURL, stopProxy, err := startGeoidemProxy(ctx, o.geoidem, stderr, "-upstream", "http://127.0.0.1:"+port,
		"-uncertain-hold", hold, "-admin-addr", "127.0.0.1:"+adminPort, "-max-conns-per-host", "-1", "-upstream-timeout", "10s")
	if err != nil {
		return row, err
	}
	defer stopProxy()

	events := make([]client.Delivery, o.events)
	for i := range events {
		events[i] = client.Delivery{URL: proxyURL + "/features", Key: fmt.Sprintf("evt-%d", i), ContentType: "application/geo+json",
			Body: fmt.Appendf(nil, `{"type":"Feature","id":"f%d","geometry":{"type":"Point","coordinates":[%d.25,48.5]},"properties":null}`, i, i%180)}
	}
	var dl heldLetters
	sender, err := client.New(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, client.Config{
		Backoff: client.Backoff{Base: 20 * time.Millisecond, Cap: 300 * time.Millisecond}, MaxAttempts: 8,
		Deadline: 20 * time.Second, AttemptTimeout: 15 * time.Second, MaxRetryAfter: 2 * time.Second,
		DeadLetter: &dl, Rand: rand.NewPCG(o.seed, 7),
	})
	if err != nil {
		return row, err
	}
	deliverAll(ctx, sender, events, o.senders)
	row.deadLettered = len(dl.take())

	// The kills stop: the receiver is restarted without faults, and every
	// event is sent once more with its key and body (a re-drive of the
	// dead letters, and a replay of the rest). What still fails is held.
	row.deaths = rcv.restartClean(ctx)
	deliverAll(ctx, sender, events, o.senders)
	var held []client.Delivery
	for _, d := range dl.take() {
		held = append(held, client.Delivery{URL: d.URL, Key: d.Key, ContentType: d.ContentType, Body: d.Body})
	}
	row.heldAfterRedrive = len(held)
	runs, err := readKeyRuns(runsFile)
	if err != nil {
		return row, err
	}
	row.twice, row.lost = countKeyRuns(events, runs)

	// The operator: a key still held as uncertain is released only if the
	// receiver did not run it (its runs file says so), then re-driven.
	var again []client.Delivery
	for _, d := range held {
		if runs[d.Key] > 0 {
			continue // it ran: its effect is there, only the answer was lost
		}
		out, err := exec.CommandContext(ctx, o.geoidem, "keys", "release", "-store", admin, "-scope", "POST /features", d.Key).CombinedOutput()
		if err != nil {
			return row, fmt.Errorf("geoidem keys release %s: %v\n%s", d.Key, err, out)
		}
		row.released++
		again = append(again, d)
	}
	deliverAll(ctx, sender, again, o.senders)
	if runs, err = readKeyRuns(runsFile); err != nil {
		return row, err
	}
	row.twiceAfter, row.lostAfter = countKeyRuns(events, runs)
	if row.uncertain, err = uncertainCount(proxyURL); err != nil {
		return row, err
	}
	return row, nil
}

// deliverAll delivers ds with n concurrent senders.
func deliverAll(ctx context.Context, s *client.Sender, ds []client.Delivery, n int) {
	jobs := make(chan client.Delivery)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for d := range jobs {
				_, _ = s.Deliver(ctx, d) // a failure is dead-lettered
			}
		})
	}
	for _, d := range ds {
		jobs <- d
	}
	close(jobs)
	wg.Wait()
}

// heldLetters is an in-memory dead-letter sink.
type heldLetters struct {
	mu  sync.Mutex
	dls []client.DeadLetter
}

func (s *heldLetters) Put(_ context.Context, d client.DeadLetter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dls = append(s.dls, d)
	return nil
}

// take returns the dead letters put since the last take.
func (s *heldLetters) take() []client.DeadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dls
	s.dls = nil
	return d
}

// readKeyRuns reads the receiver's runs file: how many times each key ran.
func readKeyRuns(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	runs := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Key string `json:"key"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			runs[r.Key]++
		}
	}
	return runs, sc.Err()
}

// countKeyRuns returns the events run more than once (each extra run
// counted) and those never run.
func countKeyRuns(events []client.Delivery, runs map[string]int) (twice, lost int) {
	for _, e := range events {
		switch n := runs[e.Key]; {
		case n == 0:
			lost++
		case n > 1:
			twice += n - 1
		}
	}
	return twice, lost
}

var uncertainLine = regexp.MustCompile(`(?m)^geoidem_upstream_requests_total\{result="uncertain"\} (\d+)$`)

func uncertainCount(proxyURL string) (int, error) {
	resp, err := http.Get(proxyURL + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := uncertainLine.FindSubmatch(b)
	if m == nil {
		return 0, errors.New("no uncertain count in the proxy's metrics")
	}
	return strconv.Atoi(string(m[1]))
}

func spareLoopbackPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// startGeoidemProxy starts `geoidem proxy` and returns its URL.
func startGeoidemProxy(ctx context.Context, bin string, stderr io.Writer, args ...string) (string, func(), error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"proxy", "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = io.Discard // its warnings, one per uncertain outcome, are counted in its metrics
	url, err := startedAt(cmd, regexp.MustCompile(`^geoidem proxy: serving (http://[^,\s]+)`))
	if err != nil {
		return "", nil, err
	}
	return url, func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }, nil
}

// startedAt starts cmd and returns the first group of the first line of
// its output that re matches.
func startedAt(cmd *exec.Cmd, re *regexp.Regexp) (string, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return m[1], nil
		}
	}
	_ = cmd.Wait()
	return "", fmt.Errorf("%q ended without printing its address", cmd.Args)
}

// supervised is the receiver process, restarted on its port at once
// whenever it dies.
type supervised struct {
	args   []string
	stderr io.Writer
	mu     sync.Mutex
	cmd    *exec.Cmd
	deaths atomic.Int64
	done   chan struct{} // closed when supervising stops
	exited chan struct{} // closed when the supervisor loop returned
}

// start starts the receiver with extra args, and a supervisor that
// restarts it, with a new seed each time, whenever it exits.
func (s *supervised) start(ctx context.Context, extra []string, seed uint64) error {
	s.done, s.exited = make(chan struct{}), make(chan struct{})
	launch := func(n uint64) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, "/usr/bin/python3", append(append(append([]string(nil), s.args...), extra...), "--seed", fmt.Sprint(seed*1000+n))...)
		cmd.Stderr = s.stderr
		if _, err := startedAt(cmd, regexp.MustCompile(`^receiver: serving (http://\S+)`)); err != nil {
			return nil, err
		}
		return cmd, nil
	}
	cmd, err := launch(0)
	if err != nil {
		return err
	}
	s.cmd = cmd
	go func() {
		defer close(s.exited)
		for n := uint64(1); ; n++ {
			_ = cmd.Wait()
			select {
			case <-s.done:
				return
			default:
			}
			s.deaths.Add(1)
			for {
				if cmd, err = launch(n); err == nil {
					break
				}
				select {
				case <-s.done:
					return
				case <-time.After(50 * time.Millisecond): // the port not yet free
				}
			}
			s.mu.Lock()
			s.cmd = cmd
			s.mu.Unlock()
		}
	}()
	return nil
}

// stop ends the receiver and its supervisor.
func (s *supervised) stop() {
	close(s.done)
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
}

// restartClean stops the faulty receiver and starts it again without
// faults; it returns how many times the faulty one died.
func (s *supervised) restartClean(ctx context.Context) int {
	s.stop()
	deaths := int(s.deaths.Load())
	_ = s.start(ctx, nil, 0)
	return deaths
}

func reportUpstream(w io.Writer, o upstreamOptions, rows []upstreamRow) int {
	fmt.Fprintf(w, "geoidem proxy before an aiohttp receiver killed in requests (%d events, die before the work %.0f%%, after it and before the answer %.0f%%, seed %d)\n\n",
		o.events, 100*o.dieBefore, 100*o.dieAfter, o.seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "uncertain outcome\treceiver dedups\treceiver deaths\tuncertain\tdead-lettered\theld after re-drive\trun twice\tlost\toperator released\trun twice after\tlost after\t")
	code := 0
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.mode, r.dedup, r.deaths, r.uncertain, r.deadLettered, r.heldAfterRedrive,
			r.twice, r.lost, r.released, r.twiceAfter, r.lostAfter)
		// Releasing an uncertain key before a receiver that does not
		// deduplicate is the cost the row measures; every other
		// configuration must end with nothing run twice and nothing lost.
		if (r.mode == "hold" || r.dedup) && (r.twiceAfter > 0 || r.lostAfter > 0) {
			code = 1
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nrun twice, lost: events run more than once (extra runs), never run, after the re-drive of the dead letters; \"after\": once an operator released the held keys the receiver had not run, and they were re-driven.")
	fmt.Fprintln(w, "release without dedup is the reverse proxy wrapped in the middleware, which releases on any 502: its events run twice are what holding saves.")
	if code != 0 {
		fmt.Fprintln(w, "FAIL: a configuration that should run every event once did not")
	} else {
		fmt.Fprintln(w, "PASS")
	}
	return code
}
