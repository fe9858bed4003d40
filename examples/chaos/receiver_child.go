// The receiver in a child process: the -serve-receiver mode and the
// parent's handle on it, which the chaos run kills and restarts.

package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// readyPrefix starts the line a -serve-receiver child prints once it
// serves, followed by its URL.
const readyPrefix = "chaos receiver: "

// serveReceiver is the hidden -serve-receiver mode: examples/ingest's
// service on -addr, its runs appended to -run-log and each write paused
// -write-delay before its commit, until stdin closes (the parent went
// away) or ctx ends. It prints readyPrefix and its URL once it serves.
func serveReceiver(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("chaos -serve-receiver", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var cfg service.Config
	addr := fl.String("addr", "127.0.0.1:0", "listen address")
	runLog := fl.String("run-log", "", "append a line per feature a handler run is about to write to this file")
	fl.StringVar(&cfg.Store, "store", "", "store URL")
	fl.StringVar(&cfg.KeyTable, "key-table", "", "PostgreSQL key table")
	fl.StringVar(&cfg.FeaturesTable, "features-table", "", "PostgreSQL feature table")
	fl.StringVar(&cfg.RedisPrefix, "redis-prefix", "", "Redis key prefix")
	fl.DurationVar(&cfg.Lease, "lease", lease, "lease")
	fl.DurationVar(&cfg.StoreTimeout, "store-timeout", storeTimeout, "store timeout")
	writeDelay := fl.Duration("write-delay", 0, "pause before each write commits")
	effectDelay := fl.Duration("effect-delay", 0, "pause after each write took effect, before the key's completion")
	volatile := fl.Bool("redis-volatile", false, "accept a Redis without persistence")
	logEffects := fl.Bool("log-effects", false, "also append a line per feature a write took, and per feature it replaced, to -run-log")
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
	var log io.Writer
	if *runLog != "" {
		// O_APPEND: the lines of a child killed with SIGKILL stay.
		f, err := os.OpenFile(*runLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "chaos receiver: %v\n", err)
			return 1
		}
		defer f.Close()
		log = f
	}
	counter := newRunCounter(log, *writeDelay)
	counter.logEffects = *logEffects
	counter.effectDelay = *effectDelay
	cfg.WrapFeatures = counter.wrap
	svc, err := service.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "chaos receiver: %v\n", err)
		return 1
	}
	defer svc.Close()
	// SIGTERM is a graceful stop, as an orchestrator's: the server stops
	// taking connections and the requests in progress finish.
	term, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
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
	case <-term.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}

// child runs the receiver as a child process that can be killed and
// restarted on the same port. Writes and effects are read from the
// PostgreSQL feature table, attempts from the run log every child appends
// to.
type child struct {
	exe           string
	args          []string // after -addr
	stderr        io.Writer
	direct, table string // the feature table, and a connection to it
	runLog        string // the file every child appends its runs to

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
	return pgWrites(ctx, c.direct, c.table)
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
	removeRunLog(c.runLog)
}

// executable is the program a child receiver runs: this one.
var executable = os.Executable

// childWriteDelay widens the window between a child's feature write and
// its commit, so that a SIGKILL often lands inside a transaction.
const childWriteDelay = 20 * time.Millisecond

// newChild starts the receiver as a child process on st's store. A service
// of the harness's own on the same tables creates them first.
func newChild(ctx context.Context, st *storeSetup, stderr io.Writer) (*child, error) {
	if err := createTables(ctx, st); err != nil {
		return nil, err
	}
	c, err := childOn(st, stderr)
	if err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		removeRunLog(c.runLog)
		return nil, err
	}
	return c, nil
}

// createTables has a service of the harness's own create st's tables (or
// check its Redis) before any child starts.
func createTables(ctx context.Context, st *storeSetup) error {
	own, err := service.New(ctx, st.harnessConfig())
	if err != nil {
		return err
	}
	own.Close()
	return nil
}

// childOn returns a child receiver on st's store, not started, with a run
// log of its own, which outlives a SIGKILL and every restart.
func childOn(st *storeSetup, stderr io.Writer, extra ...string) (*child, error) {
	exe, err := executable()
	if err != nil {
		return nil, err
	}
	c := &child{
		exe: exe,
		args: append([]string{"-store", st.cfg.Store, "-key-table", st.cfg.KeyTable, "-features-table", st.cfg.FeaturesTable,
			"-redis-prefix", st.cfg.RedisPrefix, "-lease", lease.String(), "-store-timeout", storeTimeout.String(), "-write-delay", childWriteDelay.String(),
			"-redis-volatile=" + strconv.FormatBool(st.cfg.RedisDurability == redisstore.AcceptVolatile)}, extra...),
		stderr: stderr,
		direct: st.direct,
		table:  st.cfg.FeaturesTable,
	}
	if c.runLog, err = newRunLog(); err != nil {
		return nil, err
	}
	c.args = append(c.args, "-run-log", c.runLog)
	return c, nil
}
