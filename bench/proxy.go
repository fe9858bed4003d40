package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// Section 12: `geoidem proxy` against a plain httputil.ReverseProxy, each
// in a process of its own in front of the same receiver in another
// language (examples/aiohttp/receiver.py, Debian's python3-aiohttp, one
// process), at 1 and 64 clients. A request's cost is the wall time per
// request the clients see (at 1 client, its latency; at 64, the inverse
// of the throughput): what a team puts in front of its receiver pays. The
// proxies' own CPU time per request is shown beside it. geoidem proxy
// runs with the memory store and its defaults, its front door built by
// frontdoor.New: the load comes from one address, which no bound holds to
// a share while no other client holds any.

// proxyGoal is the most geoidem proxy's time per request may be, as a
// multiple of the ReverseProxy's.
const proxyGoal = 1.2

// rpServeEnv makes this binary the ReverseProxy child: its value is the
// upstream URL.
const rpServeEnv = "GEOIDEM_BENCH_REVERSEPROXY"

// reverseProxyChild serves a plain httputil.ReverseProxy to the upstream
// rpServeEnv names, prints its address, and serves until its standard
// input closes; it reports whether this process is that child.
func reverseProxyChild() (int, bool) {
	up := os.Getenv(rpServeEnv)
	if up == "" {
		return 0, false
	}
	target, err := url.Parse(up)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 2 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	fmt.Printf("reverseproxy: serving http://%s\n", ln.Addr())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	_ = http.Serve(ln, rp)
	return 0, true
}

// proxyTarget is one proxy process of the section.
type proxyTarget struct {
	name string
	url  string
	pid  int
}

func runProxy(ctx context.Context, s *section) error {
	o := s.o
	dir, err := os.MkdirTemp("", "bench-proxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script, err := filepath.Abs(filepath.Join("..", "examples", "aiohttp", "receiver.py"))
	if err == nil {
		if _, err = os.Stat(script); err != nil {
			script, _ = filepath.Abs(filepath.Join("examples", "aiohttp", "receiver.py"))
			_, err = os.Stat(script)
		}
	}
	if err != nil {
		return notAvailable{"examples/aiohttp/receiver.py not found from here"}
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		return notAvailable{"no /usr/bin/python3"}
	}
	geoidem := filepath.Join(dir, "geoidem")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", geoidem, "github.com/geoidem/geoidem/cmd/geoidem").CombinedOutput(); err != nil {
		return fmt.Errorf("building geoidem: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var stops []func()
	defer func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}()
	start := func(cmd *exec.Cmd, re string) (string, int, error) {
		u, stop, err := startProxyChild(cmd, regexp.MustCompile(re))
		if err != nil {
			return "", 0, err
		}
		stops = append(stops, stop)
		return u, cmd.Process.Pid, nil
	}
	receiver, _, err := start(exec.CommandContext(ctx, "/usr/bin/python3", script, "--port", "0"), `^receiver: serving (http://\S+)`)
	if err != nil {
		return err
	}
	rpCmd := exec.CommandContext(ctx, self)
	rpCmd.Env = append(os.Environ(), rpServeEnv+"="+receiver)
	rpURL, rpPid, err := start(rpCmd, `^reverseproxy: serving (http://\S+)`)
	if err != nil {
		return err
	}
	gpURL, gpPid, err := start(exec.CommandContext(ctx, geoidem, "proxy", "-addr", "127.0.0.1:0", "-upstream", receiver), `^geoidem proxy: serving (http://[^,\s]+)`)
	if err != nil {
		return err
	}
	targets := []proxyTarget{{"httputil.ReverseProxy", rpURL, rpPid}, {"geoidem proxy", gpURL, gpPid}}

	requests := map[int]int{1: o.proxyRequests[0], 64: o.proxyRequests[1]}
	rounds := o.proxyRounds
	var keyN atomic.Int64
	s.line("Both proxies run as processes of their own in front of one aiohttp receiver (one Python process, no idempotency of its own),")
	s.line("which every request reaches: each key is new. Rounds interleave the two proxies (odd rounds in reverse order); a figure is the")
	s.line("median over %d rounds. Time per request: the wall time of the round over its requests (at 1 client, the latency; at 64, the", rounds)
	s.line("inverse of the throughput). CPU per request: the proxy process's own user and system time (from /proc), over its requests.")
	s.line("")
	var rows [][]string
	for _, clients := range []int{1, 64} {
		n := requests[clients]
		perReq := map[string][]float64{}
		cpuReq := map[string][]float64{}
		// Warm both: connections to the receiver, and the proxies' pools.
		for _, t := range targets {
			if _, err := proxyLoad(ctx, t.url, clients, clients*4, &keyN); err != nil {
				return fmt.Errorf("%s, warming: %w", t.name, err)
			}
		}
		for r := range rounds {
			order := slices.Clone(targets)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, t := range order {
				before := testkit.PidsCPU([]int{t.pid})[t.pid]
				elapsed, err := proxyLoad(ctx, t.url, clients, n, &keyN)
				if err != nil {
					return fmt.Errorf("%s at %d clients: %w", t.name, clients, err)
				}
				after := testkit.PidsCPU([]int{t.pid})[t.pid]
				perReq[t.name] = append(perReq[t.name], float64(elapsed.Microseconds())/float64(n))
				cpuReq[t.name] = append(cpuReq[t.name], float64((after-before).Microseconds())/float64(n))
			}
		}
		rp, gp := median(perReq[targets[0].name]), median(perReq[targets[1].name])
		ratios := make([]float64, rounds)
		met := 0
		for i := range ratios {
			ratios[i] = perReq[targets[1].name][i] / perReq[targets[0].name][i]
			if ratios[i] <= proxyGoal {
				met++
			}
		}
		ratio := gp / rp
		for _, t := range targets {
			rows = append(rows, []string{fmt.Sprint(clients), t.name, fmt.Sprintf("%.0f µs", median(perReq[t.name])),
				fmt.Sprintf("%.0f µs", median(cpuReq[t.name])), fmt.Sprint(n)})
		}
		s.goal(goalRow{figure: fmt.Sprintf("geoidem proxy's time per request over httputil.ReverseProxy's, %d client(s), aiohttp receiver", clients),
			value: ratio, rounds: ratios, roundsMet: met, bound: proxyGoal, atMost: true, goalText: fmt.Sprintf("≤ %.1f×", proxyGoal), digits: 2})
		s.headline(fmt.Sprintf("geoidem proxy / ReverseProxy, %d client(s)", clients), "%.2f× the time per request (%s)", ratio, verdict(ratio <= proxyGoal))
		o.logf("proxy: %d clients: ReverseProxy %.0f µs, geoidem proxy %.0f µs per request (%.2f×)", clients, rp, gp, ratio)
	}
	s.table([]string{"clients", "proxy", "time per request", "proxy CPU per request", "requests a round"}, rows)
	return nil
}

// proxyLoad posts n new features through the proxy at url from clients
// concurrent clients, each on a connection of its own, and returns the
// wall time; every answer must be 201.
func proxyLoad(ctx context.Context, url string, clients, n int, keyN *atomic.Int64) (time.Duration, error) {
	c := newClient(clients)
	defer c.CloseIdleConnections()
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				key := fmt.Sprintf("bench-proxy-%d", keyN.Add(1))
				if err := post(ctx, c, url+"/features", key, false); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(t0), firstErr
}

// startProxyChild starts cmd and returns the first group of the first line of
// its output that re matches, and what ends it (its standard input closed,
// then SIGTERM, then SIGKILL).
func startProxyChild(cmd *exec.Cmd, re *regexp.Regexp) (string, func(), error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		stdin.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return m[1], stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("%s ended without printing its address", strings.Join(cmd.Args, " "))
}
