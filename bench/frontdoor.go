package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// Section 9: the front door (issue 35). Two attacks that stay below the
// request layer, each against a receiving service in a process of its own
// (this binary again), wired three ways:
//
//   - "as main wires it": the idempotency middleware over memstore behind
//     middleware.Admission, in an http.Server with examples/ingest's
//     timeouts (ReadTimeout 30 s, IdleTimeout 2 min);
//   - "BodyRate only": the same behind frontdoor.BodyRate (defaults), with
//     Admission's BodyDeadline;
//   - "front door": that, and frontdoor.Conns (defaults) around the
//     listener and in ConnState, IdleTimeout frontdoor.DefaultIdleTimeout.
//
// Idle connections: attacker processes (two, each within the file
// descriptor limit) open fdIdleConns connections from 127.0.0.2–254, each
// idle after one GET /healthz, and hold what the server keeps (a
// persistent attacker also connects again 2 s after the server closes
// one); then a prober on 127.0.0.1 asks /healthz on a new connection every
// 250 ms. Slow bodies: 64 connections from 127.0.0.2–5,
// each declaring 100 bytes and sending one every 2 s, connecting again at
// once when one ends; a sender on 127.0.0.6 posts a small body every
// 100 ms.

// The environment variables that make this binary a child of the section.
const (
	fdServeEnv = "GEOIDEM_BENCH_FRONTDOOR_SERVE" // serve: bare, rate or door
	fdIdleEnv  = "GEOIDEM_BENCH_FRONTDOOR_IDLE"  // hold idle connections: addr,count,offset,redial
)

// The section's targets (issue 35).
const (
	fdVictimGoal = 0.95            // share of 2xx for the sender under slow bodies
	fdProbeGoal  = 0.95            // share of /healthz answered within fdProbeLimit
	fdProbeLimit = time.Second     // under idle connections
	fdRSSGoal    = 256 << 20       // the server's peak resident memory under them
	fdRedial     = 2 * time.Second // an idle attacker's pause before it connects again
	fdSlowEvery  = 2 * time.Second // a slow body's pace: one byte per
	fdProbeEvery = 250 * time.Millisecond
)

var fdModes = map[string]string{"bare": "as main wires it", "rate": "BodyRate only", "door": "front door"}

// frontdoorChild runs this process's part when it is a child of section 9,
// and reports whether it was one.
func frontdoorChild() (int, bool) {
	if mode := os.Getenv(fdServeEnv); mode != "" {
		return fdServe(mode), true
	}
	if spec := os.Getenv(fdIdleEnv); spec != "" {
		return fdHoldIdle(spec), true
	}
	return 0, false
}

// raiseFileLimit raises the soft limit on open files to the hard one and
// returns it.
func raiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}

// fdServe is the service child: it prints its address and serves until
// its standard input closes.
func fdServe(mode string) int {
	raiseFileLimit()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "serve:", err); return 1 }
	store := new(memstore.Store)
	idem, err := middleware.New(store, middleware.Config{})
	if err != nil {
		return fail(err)
	}
	var acfg middleware.AdmissionConfig
	var rate *frontdoor.BodyRate
	if mode != "bare" {
		if rate, err = frontdoor.NewBodyRate(frontdoor.BodyRateConfig{}); err != nil {
			return fail(err)
		}
		acfg.BodyDeadline = frontdoor.BodyDeadline
	}
	admit, err := middleware.NewAdmission(acfg)
	if err != nil {
		return fail(err)
	}
	post := admit.Handler(idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	})))
	if rate != nil {
		post = rate.Handler(post)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /features", post)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	srv := &http.Server{
		Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, ErrorLog: log.New(os.Stderr, "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	addr := ln.Addr().String()
	if mode == "door" {
		conns, err := frontdoor.NewConns(frontdoor.ConnsConfig{})
		if err != nil {
			return fail(err)
		}
		ln, srv.ConnState = conns.Listener(ln), conns.ConnState
		srv.IdleTimeout, srv.ReadTimeout = frontdoor.DefaultIdleTimeout, frontdoor.DefaultBodyTimeout
	}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// fdHost is the loopback source address of attacker connection i, from
// 127.0.0.2 to 127.0.0.254.
func fdHost(i int) net.IP { return net.IPv4(127, 0, 0, byte(2+i%253)) }

// fdHoldIdle is an idle attacker child: spec is addr,count,offset,redial.
// It opens count connections, each idle after one GET /healthz; when
// redial is true, it connects again fdRedial after the server closes one.
// It prints "held dials" every 500 ms until its standard input closes.
func fdHoldIdle(spec string) int {
	parts := strings.Split(spec, ",")
	if len(parts) != 4 {
		return 2
	}
	redial := parts[3] == "true"
	addr := parts[0]
	count, _ := strconv.Atoi(parts[1])
	offset, _ := strconv.Atoi(parts[2])
	raiseFileLimit()
	ctx, cancel := context.WithCancel(context.Background())
	var held, dials atomic.Int64
	for i := range count {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: fdHost(offset + i)}, Timeout: 5 * time.Second}
		go func() {
			buf := make([]byte, 512)
			for ctx.Err() == nil {
				dials.Add(1)
				c, err := d.DialContext(ctx, "tcp", addr)
				if err == nil {
					_ = c.SetDeadline(time.Now().Add(10 * time.Second))
					_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
					if err == nil {
						var resp *http.Response
						if resp, err = http.ReadResponse(bufio.NewReaderSize(c, 512), nil); err == nil {
							resp.Body.Close()
						}
					}
					if err == nil {
						held.Add(1)
						_ = c.SetDeadline(time.Time{})
						_, _ = c.Read(buf) // idle until the server closes it
						held.Add(-1)
					}
					c.Close()
				}
				if !redial {
					return
				}
				time.Sleep(fdRedial)
			}
		}()
	}
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
			fmt.Printf("%d %d\n", held.Load(), dials.Load())
		}
	}
}

// fdChild is a running child process of the section.
type fdChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its standard output, line by line
	stderr *lineCounter
}

// startChild starts this binary as a child with env set.
func startChild(env string) (*fdChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env)
	c := &fdChild{cmd: cmd, lines: make(chan string, 64), stderr: &lineCounter{}}
	cmd.Stderr = c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default: // the reader wants only the latest
			}
		}
		close(c.lines)
	}()
	return c, nil
}

// stop closes the child's standard input and waits for it, killing it
// after 10 s.
func (c *fdChild) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// lineCounter keeps a child's standard error: the number of lines with
// "too many open files", and the first few lines.
type lineCounter struct {
	mu     sync.Mutex
	emfile int
	first  []string
	part   string
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.part + string(p)
	lines := strings.Split(s, "\n")
	l.part = lines[len(lines)-1]
	for _, line := range lines[:len(lines)-1] {
		if strings.Contains(line, "too many open files") {
			l.emfile++
		}
		if len(l.first) < 5 {
			l.first = append(l.first, line)
		}
	}
	return len(p), nil
}

func (l *lineCounter) snapshot() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.emfile, slices.Clone(l.first)
}

// startServer starts the service child in mode and returns it with its
// address.
func startServer(mode string) (*fdChild, string, error) {
	c, err := startChild(fdServeEnv + "=" + mode)
	if err != nil {
		return nil, "", err
	}
	select {
	case addr, ok := <-c.lines:
		if ok {
			return c, addr, nil
		}
	case <-time.After(30 * time.Second):
	}
	c.stop()
	_, first := c.stderr.snapshot()
	return nil, "", fmt.Errorf("the %s service did not start: %v", mode, first)
}

// procStatus reads a field of /proc/pid/status in kB, as bytes.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// openFiles counts a process's open file descriptors.
func openFiles(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// idleResult is one row of the idle-connection table.
type idleResult struct {
	mode           string
	attempted      int   // connections the attackers keep trying to hold
	held           int   // held (answered, not yet closed) at the end
	dials          int   // connections the attackers opened in all
	serverFiles    int   // the server's open file descriptors at the end
	peakRSS        int64 // the server's VmHWM
	probes, inTime int
	probeTimes     []time.Duration
	probeErrs      map[string]int
	emfile         int
}

func runIdle(ctx context.Context, s *section, mode string, conns int, redial bool) (idleResult, error) {
	res := idleResult{mode: mode, attempted: conns, probeErrs: map[string]int{}}
	srv, addr, err := startServer(mode)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	var attackers []*fdChild
	defer func() {
		for _, a := range attackers {
			a.stop()
		}
	}()
	half := conns / 2
	for i, n := range []int{half, conns - half} {
		a, err := startChild(fmt.Sprintf("%s=%s,%d,%d,%t", fdIdleEnv, addr, n, i*half, redial))
		if err != nil {
			return res, err
		}
		attackers = append(attackers, a)
	}
	latest := make([][2]int, len(attackers))
	poll := func() (held, dials int) {
		for i, a := range attackers {
			for drained := false; !drained; {
				select {
				case line, ok := <-a.lines:
					if !ok {
						drained = true
						break
					}
					f := strings.Fields(line)
					if len(f) == 2 {
						latest[i][0], _ = strconv.Atoi(f[0])
						latest[i][1], _ = strconv.Atoi(f[1])
					}
				default:
					drained = true
				}
			}
			held, dials = held+latest[i][0], dials+latest[i][1]
		}
		return held, dials
	}
	// Ramp: every attacker connection tried once, then a few seconds more.
	rampEnd := time.Now().Add(90 * time.Second)
	for _, dials := poll(); dials < conns && time.Now().Before(rampEnd); _, dials = poll() {
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return res, err
		}
	}
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		return res, err
	}
	h, _ := poll()
	s.o.logf("frontdoor: idle, %s: %d connections held, probing", mode, h)
	tries := 20
	if s.o.quick {
		tries = 8
	}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}).DialContext}
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for range tries {
		t0 := time.Now()
		resp, err := hc.Get("http://" + addr + "/healthz")
		took := time.Since(t0)
		res.probes++
		switch {
		case err != nil:
			res.probeErrs[shortErr(err)]++
		case resp.StatusCode != http.StatusOK:
			res.probeErrs[resp.Status]++
		case took <= fdProbeLimit:
			res.inTime++
		}
		if err == nil {
			resp.Body.Close()
		}
		res.probeTimes = append(res.probeTimes, took)
		if err := sleepCtx(ctx, fdProbeEvery); err != nil {
			return res, err
		}
	}
	res.held, res.dials = poll()
	res.serverFiles = openFiles(srv.cmd.Process.Pid)
	res.peakRSS = procStatus(srv.cmd.Process.Pid, "VmHWM")
	res.emfile, _ = srv.stderr.snapshot()
	return res, nil
}

func shortErr(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// slowResult is one row of the slow-body table.
type slowResult struct {
	mode        string
	tries, ok   int
	other       map[string]int
	retryAfters []int // the Retry-After of each refusal, in seconds
	attackers   map[int]int
}

// runSlow runs the slow-body attack against a service in mode while the
// sender posts for d.
func runSlow(ctx context.Context, s *section, mode string, d time.Duration) (slowResult, error) {
	res := slowResult{mode: mode, other: map[string]int{}}
	srv, addr, err := startServer(mode)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	a := startSlowBodies(addr, 4, 16)
	stopped := false
	defer func() {
		if !stopped {
			a.stop()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for a.started.Load() < 64 && time.Now().Before(deadline) {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return res, err
		}
	}
	if err := sleepCtx(ctx, time.Second); err != nil {
		return res, err
	}
	s.o.logf("frontdoor: slow bodies, %s: %d started, sending", mode, a.started.Load())
	d6 := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 6)}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d6.DialContext}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for end := time.Now().Add(d); time.Now().Before(end); {
		res.tries++
		body := `{"type":"Feature","id":"v` + strconv.Itoa(res.tries) + `","geometry":null,"properties":null}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/features", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "victim-"+strconv.Itoa(res.tries))
		resp, err := hc.Do(req)
		switch {
		case err != nil:
			res.other[shortErr(err)]++
		case resp.StatusCode/100 == 2:
			res.ok++
		default:
			res.other[strconv.Itoa(resp.StatusCode)]++
			if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				res.retryAfters = append(res.retryAfters, ra)
			}
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return res, err
		}
	}
	res.attackers, stopped = a.stop(), true
	return res, nil
}

// slowBodies keeps connections from hosts 127.0.0.2… sending slow bodies.
type slowBodies struct {
	mu       sync.Mutex
	statuses map[int]int // the attackers' answers; 0: closed without one
	started  atomic.Int64
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

func startSlowBodies(addr string, hosts, perHost int) *slowBodies {
	ctx, cancel := context.WithCancel(context.Background())
	a := &slowBodies{statuses: map[int]int{}, cancel: cancel}
	for h := range hosts {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: fdHost(h)}, Timeout: 5 * time.Second}
		for i := range perHost {
			a.wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					a.once(ctx, d, addr, fmt.Sprintf("slow-%d-%d-%d", h, i, n))
				}
			})
		}
	}
	return a
}

// once sends one slow body and waits for its end.
func (a *slowBodies) once(ctx context.Context, d *net.Dialer, addr, key string) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		_ = sleepCtx(ctx, 10*time.Millisecond)
		return
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := fmt.Fprintf(c, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", key); err != nil {
		return
	}
	a.started.Add(1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(fdSlowEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	status := 0
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		status = resp.StatusCode
		resp.Body.Close()
	}
	a.mu.Lock()
	a.statuses[status]++
	a.mu.Unlock()
}

func (a *slowBodies) stop() map[int]int {
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.statuses
}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

func runFrontdoor(ctx context.Context, s *section) error {
	o := s.o
	limit := raiseFileLimit()
	conns, slowFor := o.fdIdleConns, o.fdSlowFor
	s.line("Each service runs in a process of its own (this binary again, file descriptor limit raised to the hard limit: %d here),", limit)
	s.line("wired three ways: **as main wires it** (the idempotency middleware over memstore behind `middleware.Admission`, in an")
	s.line("`http.Server` with examples/ingest's timeouts: ReadTimeout 30 s, IdleTimeout 2 min); **BodyRate only** (that behind")
	s.line("`frontdoor.BodyRate`, defaults: 1 KiB/s after 5 s, and Admission's `BodyDeadline`); **front door** (that, with")
	s.line("`frontdoor.Conns`, defaults: 1024 open, 8 per host, 256 idle, around the listener and in ConnState; IdleTimeout 30 s).")
	s.line("")
	s.line("### Slow bodies")
	s.line("")
	s.line("64 connections from 127.0.0.2–5 (16 each), each declaring a 100-byte body and sending one byte every %v, connecting", fdSlowEvery)
	s.line("again at once when the server answers or closes; a sender on 127.0.0.6 posts a small valid Feature every 100 ms for")
	s.line("%v. Target (issue 35): the sender gets ≥ %.0f%% 2xx.", slowFor, fdVictimGoal*100)
	s.line("")
	var rows [][]string
	var doorSlow slowResult
	for _, mode := range []string{"bare", "rate", "door"} {
		r, err := runSlow(ctx, s, mode, slowFor)
		if err != nil {
			return err
		}
		ra := "—"
		if len(r.retryAfters) > 0 {
			ra = fmt.Sprintf("%d s first, %d–%d s", r.retryAfters[0], slices.Min(r.retryAfters), slices.Max(r.retryAfters))
		}
		share := float64(r.ok) / float64(max(1, r.tries))
		rows = append(rows, []string{fdModes[mode], fmt.Sprintf("%d/%d (%.1f%%)", r.ok, r.tries, share*100), fmt.Sprint(r.other), ra,
			fmt.Sprintf("%d 408, %d closed unanswered, %v", r.attackers[408], r.attackers[0], r.attackers)})
		if mode == "door" {
			doorSlow = r
		}
	}
	s.table([]string{"service", "sender's 2xx", "sender's other answers", "Retry-After of the refusals", "attackers' answers"}, rows)
	doorShare := float64(doorSlow.ok) / float64(max(1, doorSlow.tries))
	s.line("Front door against the target: %.1f%% 2xx, %s.", doorShare*100, verdict(doorShare >= fdVictimGoal))
	s.line("")
	s.headline("slow bodies, 64 connections from 4 addresses: a sender's 2xx behind the front door", "%.1f%% (target ≥ %.0f%%)", doorShare*100, fdVictimGoal*100)

	s.line("### Idle connections")
	s.line("")
	s.line("Two attacker processes open %d connections from 127.0.0.2–254, each idle after one `GET /healthz`: as in issue 35, they", conns)
	s.line("hold what the server keeps; a **persistent** attacker also connects again %v after the server closes one. Once each", fdRedial)
	s.line("connection has been tried, a prober on 127.0.0.1 asks `/healthz` on a new connection every %v (5 s timeout).", fdProbeEvery)
	s.line("Targets (issue 35): ≥ %.0f%% of the tries answered within %v, and the server's resident memory (peak, VmHWM) under %d MB.", fdProbeGoal*100, fdProbeLimit, fdRSSGoal>>20)
	s.line("")
	rows = nil
	var door, persistent idleResult
	for _, run := range []struct {
		mode   string
		redial bool
	}{{"bare", false}, {"door", false}, {"door", true}} {
		mode := run.mode
		r, err := runIdle(ctx, s, mode, conns, run.redial)
		if err != nil {
			return err
		}
		name := fdModes[mode]
		if run.redial {
			name += ", persistent attacker"
		}
		slices.Sort(r.probeTimes)
		p50, worst := r.probeTimes[len(r.probeTimes)/2], r.probeTimes[len(r.probeTimes)-1]
		rows = append(rows, []string{name, fmt.Sprintf("%d held, %d opened", r.held, r.dials), fmt.Sprint(r.serverFiles), fmt.Sprint(r.emfile),
			fmt.Sprintf("%d/%d", r.inTime, r.probes), fmt.Sprintf("%v / %v", p50.Round(time.Millisecond), worst.Round(time.Millisecond)), fmt.Sprint(r.probeErrs),
			fmt.Sprintf("%.0f MB", float64(r.peakRSS)/(1<<20))})
		switch {
		case mode == "door" && run.redial:
			persistent = r
		case mode == "door":
			door = r
		}
	}
	s.table([]string{"service", "attacker connections", "server's open files", "accept errors: too many open files", "/healthz within 1 s", "/healthz median / worst", "/healthz failures", "server's peak RSS"}, rows)
	inTime := float64(door.inTime) / float64(max(1, door.probes))
	s.line("Front door against the targets: /healthz within %v on %.0f%% of the tries, %s; peak resident memory %.0f MB, %s.",
		fdProbeLimit, inTime*100, verdict(inTime >= fdProbeGoal), float64(door.peakRSS)/(1<<20), verdict(door.peakRSS > 0 && door.peakRSS < fdRSSGoal))
	pIn := float64(persistent.inTime) / float64(max(1, persistent.probes))
	s.line("Against a persistent attacker: within %v on %.0f%% of the tries, %s; peak resident memory %.0f MB, %s.",
		fdProbeLimit, pIn*100, verdict(pIn >= fdProbeGoal), float64(persistent.peakRSS)/(1<<20), verdict(persistent.peakRSS > 0 && persistent.peakRSS < fdRSSGoal))
	s.headline(fmt.Sprintf("%d idle connections: /healthz within 1 s, server's peak RSS, behind the front door", conns),
		"%d/%d (target ≥ %.0f%%), %.0f MB (target < %d MB); persistent attacker: %d/%d, %.0f MB", door.inTime, door.probes, fdProbeGoal*100, float64(door.peakRSS)/(1<<20), fdRSSGoal>>20,
		persistent.inTime, persistent.probes, float64(persistent.peakRSS)/(1<<20))
	return nil
}
