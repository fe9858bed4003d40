package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/examples/internal/ingest"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// receiver is the service under test, however it runs.
type receiver interface {
	// URL is the receiver's base URL, http://127.0.0.1:port.
	URL() string
	// Writes returns how many times each feature id was written.
	Writes(ctx context.Context) (map[string]int, error)
	// Runs returns the receiver's run counts: the handler runs that
	// reached the write (attempts), the in-memory guard's skips, and the
	// runs that took effect, per feature id.
	Runs(ctx context.Context) (ingest.Runs, error)
	// Outcomes returns the middleware's outcome counts, or nil when they
	// are not known (a child process that was killed took them along).
	Outcomes() map[middleware.Outcome]int
	Close()
}

// server serves h on a fresh 127.0.0.1 port.
func server(addr string, h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

// inProcess is internal/ingest served in this process.
type inProcess struct {
	svc *ingest.Service
	srv *http.Server
	url string
}

func newInProcess(ctx context.Context, cfg ingest.Config) (*inProcess, error) {
	svc, err := ingest.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	srv, u, err := server("127.0.0.1:0", svc.Handler())
	if err != nil {
		svc.Close()
		return nil, err
	}
	return &inProcess{svc: svc, srv: srv, url: u}, nil
}

func (r *inProcess) URL() string { return r.url }
func (r *inProcess) Writes(ctx context.Context) (map[string]int, error) {
	return r.svc.Writes(ctx)
}
func (r *inProcess) Runs(ctx context.Context) (ingest.Runs, error) { return r.svc.Runs(ctx) }
func (r *inProcess) Outcomes() map[middleware.Outcome]int          { return r.svc.Outcomes() }
func (r *inProcess) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	r.svc.Close()
}

// naive is a receiver without the middleware: it applies every request it
// gets, retries included. It exists to show that the harness catches a
// receiver that is not exactly-once.
type naive struct {
	srv *http.Server
	url string

	mu sync.Mutex
	n  map[string]int
}

func newNaive() (*naive, error) {
	r := &naive{n: map[string]int{}}
	srv, u, err := server("127.0.0.1:0", http.HandlerFunc(r.serve))
	if err != nil {
		return nil, err
	}
	r.srv, r.url = srv, u
	return r, nil
}

func (r *naive) serve(w http.ResponseWriter, req *http.Request) {
	var f struct {
		ID any `json:"id"`
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil || json.Unmarshal(body, &f) != nil || f.ID == nil {
		http.Error(w, "a feature needs an id", http.StatusUnprocessableEntity)
		return
	}
	r.mu.Lock()
	r.n[fmt.Sprint(f.ID)]++
	r.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (r *naive) URL() string { return r.url }
func (r *naive) Writes(context.Context) (map[string]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n), nil
}

// Runs: every request with an id runs and writes; there is no guard.
func (r *naive) Runs(context.Context) (ingest.Runs, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ingest.Runs{Attempts: maps.Clone(r.n), Effects: maps.Clone(r.n), Skipped: map[string]int{}}, nil
}
func (r *naive) Outcomes() map[middleware.Outcome]int { return nil }
func (r *naive) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

// readyPrefix starts the line a -serve-receiver child prints once it
// serves, followed by its URL.
const readyPrefix = "chaos receiver: "

// serveReceiver is the hidden -serve-receiver mode: internal/ingest on
// -addr until stdin closes (the parent went away) or ctx ends. It prints
// readyPrefix and its URL once it serves.
func serveReceiver(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("chaos -serve-receiver", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var cfg ingest.Config
	addr := fl.String("addr", "127.0.0.1:0", "listen address")
	runLog := fl.String("run-log", "", "append a line per feature a handler run is about to write to this file")
	fl.StringVar(&cfg.Store, "store", "", "store URL")
	fl.StringVar(&cfg.KeyTable, "key-table", "", "PostgreSQL key table")
	fl.StringVar(&cfg.FeaturesTable, "features-table", "", "PostgreSQL feature table")
	fl.StringVar(&cfg.RedisPrefix, "redis-prefix", "", "Redis key prefix")
	fl.DurationVar(&cfg.Lease, "lease", lease, "lease")
	fl.DurationVar(&cfg.StoreTimeout, "store-timeout", storeTimeout, "store timeout")
	fl.DurationVar(&cfg.WriteDelay, "write-delay", 0, "pause before each write commits")
	volatile := fl.Bool("redis-volatile", false, "accept a Redis without persistence")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *volatile {
		cfg.RedisDurability = redisstore.AcceptVolatile
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || host != "127.0.0.1" {
		fmt.Fprintf(stderr, "chaos receiver: -addr %q: want 127.0.0.1:port\n", *addr)
		return 2
	}
	if *runLog != "" {
		f, err := os.OpenFile(*runLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "chaos receiver: %v\n", err)
			return 1
		}
		defer f.Close()
		cfg.RunLog = f
	}
	svc, err := ingest.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "chaos receiver: %v\n", err)
		return 1
	}
	defer svc.Close()
	srv, u, err := server(*addr, svc.Handler())
	if err != nil {
		fmt.Fprintf(stderr, "chaos receiver: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, readyPrefix+u)
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(gone)
	}()
	select {
	case <-gone:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}

// child runs the receiver as a child process that can be killed and
// restarted on the same port. Writes come from a parent-side service on the
// same PostgreSQL tables.
type child struct {
	exe    string
	args   []string // after -addr
	stderr io.Writer
	writes *ingest.Service // the parent's view of the same tables
	runLog string          // the file every child appends its runs to

	mu    sync.Mutex
	addr  string // 127.0.0.1:port once the first start chose it
	url   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	kills int
}

// startTimeout bounds how long a child may take to serve.
const startTimeout = 60 * time.Second

// start starts the child, on the port of the previous one if there was one.
func (c *child) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr := c.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var err error
	for try := 0; try < 20; try++ { // the port may take a moment to be free again
		if err = c.startLocked(ctx, addr); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func (c *child) startLocked(ctx context.Context, addr string) error {
	cmd := exec.Command(c.exe, append([]string{"-serve-receiver", "-addr", addr}, c.args...)...)
	cmd.Stderr = c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				select {
				case ready <- u:
				default:
				}
			}
		}
		close(ready)
	}()
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case u, ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			return fmt.Errorf("receiver child exited before serving (%v)", cmd.ProcessState)
		}
		c.cmd, c.stdin, c.url = cmd, stdin, u
		c.addr = strings.TrimPrefix(u, "http://")
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return errors.New("receiver child did not start in time")
}

// kill SIGKILLs the child and starts a new one on the same port.
func (c *child) kill(ctx context.Context) error {
	c.mu.Lock()
	if c.cmd != nil {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		_ = c.cmd.Wait()
		c.cmd = nil
		c.kills++
	}
	c.mu.Unlock()
	return c.start(ctx)
}

func (c *child) Kills() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kills
}

func (c *child) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.url
}

func (c *child) Writes(ctx context.Context) (map[string]int, error) {
	return c.writes.Writes(ctx)
}

func (c *child) Outcomes() map[middleware.Outcome]int { return nil }

// Close stops the child gracefully (its stdin closes), or kills it.
func (c *child) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		_ = c.stdin.Close()
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
		c.cmd = nil
	}
	c.writes.Close()
	removeRunLog(c.runLog)
}

// executable is the program a child receiver runs: this one.
var executable = os.Executable

// childWriteDelay widens the window between a child's feature write and
// its commit, so that a SIGKILL often lands inside a transaction.
const childWriteDelay = 20 * time.Millisecond

// newChild starts the receiver as a child process on st's store. The
// harness's own service on the same tables creates them first, and
// afterwards reads the writes.
func newChild(ctx context.Context, st *storeSetup, stderr io.Writer) (*child, error) {
	exe, err := executable()
	if err != nil {
		return nil, err
	}
	own, err := ingest.New(ctx, st.harnessConfig())
	if err != nil {
		return nil, err
	}
	c := &child{
		exe: exe,
		args: []string{"-store", st.cfg.Store, "-key-table", st.cfg.KeyTable, "-features-table", st.cfg.FeaturesTable,
			"-redis-prefix", st.cfg.RedisPrefix, "-lease", lease.String(), "-store-timeout", storeTimeout.String(), "-write-delay", childWriteDelay.String(),
			"-redis-volatile=" + strconv.FormatBool(st.cfg.RedisDurability == redisstore.AcceptVolatile)},
		stderr: stderr,
		writes: own,
	}
	// Every child appends its runs to one log, which outlives a SIGKILL.
	if c.runLog, err = newRunLog(); err != nil {
		own.Close()
		return nil, err
	}
	c.args = append(c.args, "-run-log", c.runLog)
	if err := c.start(ctx); err != nil {
		own.Close()
		removeRunLog(c.runLog)
		return nil, err
	}
	return c, nil
}
