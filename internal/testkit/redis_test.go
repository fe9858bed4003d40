package testkit_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// do sends one command to addr in RESP and returns its reply as text: a
// status or error line as sent ("+OK", "-ERR …"), a bulk string as its
// value ("(nil)" for none), an integer as ":n", an array as its elements
// joined by spaces.
func do(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	return reply(bufio.NewReader(c))
}

func reply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch {
	case line == "$-1" || line == "*-1":
		return "(nil)", nil
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		v := make([]byte, n+2)
		_, err = io.ReadFull(r, v)
		return string(v[:n]), err
	case strings.HasPrefix(line, "*"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		elems := make([]string, n)
		for i := range elems {
			if elems[i], err = reply(r); err != nil {
				return "", err
			}
		}
		return strings.Join(elems, " "), nil
	}
	return line, nil
}

// want runs a command on s and wants the reply want.
func want(t *testing.T, s *testkit.RedisServer, want string, args ...string) {
	t.Helper()
	got, err := do(s.Addr(), args...)
	if err != nil || got != want {
		t.Fatalf("%s on %s = %q, %v; want %q", strings.Join(args, " "), s.Addr(), got, err, want)
	}
}

func startRedis(t *testing.T, o testkit.RedisOptions) *testkit.RedisServer {
	t.Helper()
	s, err := testkit.StartRedis(t.Context(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// A server answers PING on a private loopback port, no longer after Kill,
// and again after Restart, on the same address and, without persistence,
// empty. Stop removes the directory it made.
func TestStartKillRestart(t *testing.T) {
	t.Parallel()
	s := startRedis(t, testkit.RedisOptions{})
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || s.Addr() == "127.0.0.1:6379" {
		t.Errorf("Addr() = %q, want a private loopback port", s.Addr())
	}
	want(t, s, "+PONG", "PING")
	want(t, s, "appendonly no", "CONFIG", "GET", "appendonly")
	want(t, s, "save ", "CONFIG", "GET", "save")
	want(t, s, "+OK", "SET", "k", "v")

	s.Kill()
	if got, err := do(s.Addr(), "PING"); err == nil {
		t.Fatalf("PING after Kill = %q, want no answer", got)
	}
	s.Kill() // a second Kill does nothing

	addr := s.Addr()
	if err := s.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Addr() != addr {
		t.Errorf("Addr() after Restart = %q, want %q", s.Addr(), addr)
	}
	want(t, s, "+PONG", "PING")
	want(t, s, "(nil)", "GET", "k")

	// Restart of a running server SIGKILLs it first; its arguments are
	// RedisOptions.Args and Restart's.
	if err := s.Restart(t.Context(), "--maxmemory-policy", "volatile-lru"); err != nil {
		t.Fatalf("Restart with arguments: %v", err)
	}
	want(t, s, "maxmemory-policy volatile-lru", "CONFIG", "GET", "maxmemory-policy")

	dir := s.Dir()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the server's directory: %v", err)
	}
	s.Stop()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop, Stat(%s) = %v, want it removed", dir, err)
	}
}

// With AppendFsync and a directory of the caller's, a restart reloads every
// acknowledged write from the AOF, Args apply to every start, and Stop
// leaves the directory alone.
func TestRestartWithAOFKeepsWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startRedis(t, testkit.RedisOptions{Dir: dir, AppendFsync: "always", Args: []string{"--maxmemory-policy", "noeviction"}})
	if s.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
	}
	want(t, s, "appendonly yes", "CONFIG", "GET", "appendonly")
	want(t, s, "appendfsync always", "CONFIG", "GET", "appendfsync")
	want(t, s, "+OK", "SET", "k", "v")
	if err := s.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	want(t, s, "v", "GET", "k")
	want(t, s, "maxmemory-policy noeviction", "CONFIG", "GET", "maxmemory-policy")
	s.Stop()
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("after Stop, the caller's directory: %v, want it kept", err)
	}
}

// Two servers get two ports.
func TestStartPicksFreePorts(t *testing.T) {
	t.Parallel()
	a, b := startRedis(t, testkit.RedisOptions{}), startRedis(t, testkit.RedisOptions{})
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers on %s", a.Addr())
	}
	want(t, a, "+PONG", "PING")
	want(t, b, "+PONG", "PING")
}

// Without redis-server on PATH, Start fails at once with ErrNotInstalled,
// and says so: a test needing Redis fails rather than skips.
func TestStartWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := testkit.StartRedis(t.Context(), testkit.RedisOptions{})
	if !errors.Is(err, testkit.ErrNotInstalled) || !strings.Contains(err.Error(), "redis-server") {
		t.Fatalf("Start without redis-server = %v, want ErrNotInstalled", err)
	}
	if _, err := testkit.LookPath(); !errors.Is(err, testkit.ErrNotInstalled) {
		t.Fatalf("LookPath without redis-server = %v, want ErrNotInstalled", err)
	}
	_, err = testkit.StartRedis(t.Context(), testkit.RedisOptions{Program: "valkey-server"})
	if !errors.Is(err, testkit.ErrNotInstalled) || !strings.Contains(err.Error(), "valkey-server") {
		t.Fatalf("Start without valkey-server = %v, want ErrNotInstalled naming valkey-server", err)
	}
}

// RedisOptions.Program runs another server that takes redis-server's arguments:
// valkey-server (scripts/services installs Valkey 8), which says so in
// INFO server.
func TestStartValkey(t *testing.T) {
	t.Parallel()
	s, err := testkit.StartRedis(t.Context(), testkit.RedisOptions{Program: "valkey-server"})
	if err != nil {
		t.Fatalf("Start valkey-server: %v", err)
	}
	defer s.Stop()
	info, err := do(s.Addr(), "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "server_name:valkey") {
		t.Fatalf("INFO server of the started valkey-server lacks server_name:valkey:\n%s", info)
	}
}

// A server that cannot start says why, with its log.
func TestStartReportsABadArgument(t *testing.T) {
	t.Parallel()
	_, err := testkit.StartRedis(t.Context(), testkit.RedisOptions{Args: []string{"--no-such-option", "1"}})
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "no-such-option") {
		t.Fatalf("Start with a bad argument = %v, want an error naming it", err)
	}
}
