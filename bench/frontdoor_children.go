package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
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

// The environment variables that make this binary a child of the section.
const (
	fdServeEnv = "GEOIDEM_BENCH_FRONTDOOR_SERVE" // serve: bare or one
	fdIdleEnv  = "GEOIDEM_BENCH_FRONTDOOR_IDLE"  // hold idle connections: addr,count,offset,redial
)

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
	// The handler: 201, or a 61 KB 422 for a request marked X-Big (an
	// invalid body whose answer lists its problems).
	work := idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Big") != "" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write(fdBigAnswer)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	addr := ln.Addr().String()
	if mode == "one" {
		door, err := frontdoor.New(frontdoor.Config{KnownNetworks: []netip.Prefix{fdProviderNet}})
		if err != nil {
			return fail(err)
		}
		mux.Handle("POST /features", door.Handler(work))
		srv := door.Server(mux)
		srv.ErrorLog = log.New(os.Stderr, "", 0)
		go func() { _ = srv.Serve(door.Listener(ln)) }()
		fmt.Println(addr)
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	mux.Handle("POST /features", work)
	srv := &http.Server{
		Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, ErrorLog: log.New(os.Stderr, "", 0),
	}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// fdBigAnswer is the 61 KB answer of a request marked X-Big.
var fdBigAnswer = []byte(`{"type":"about:blank","status":422,"detail":"` + strings.Repeat("x", 61<<10) + `"}`)

// fdProviderNet is the known senders' network of the "one" service: the
// provider of the many-address runs sends from it.
var fdProviderNet = netip.MustParsePrefix("127.2.0.0/16")

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
