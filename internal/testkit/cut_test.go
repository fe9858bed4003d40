package testkit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on loopback.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return errors.New("echo answered " + line)
	}
	return nil
}

func TestCutAndRestore(t *testing.T) {
	p, err := NewCutter(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := roundTrip(p.Addr()); err != nil {
		t.Fatalf("before the cut: %v", err)
	}

	// A live connection is reset by Cut.
	live, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if _, err := io.WriteString(live, "a\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(live)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	_ = live.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("a live connection survived the cut")
	}
	if err := roundTrip(p.Addr()); err == nil {
		t.Error("a new connection was served while cut")
	}
	p.Restore()
	if err := roundTrip(p.Addr()); err != nil {
		t.Fatalf("after the restore: %v", err)
	}
	s := p.Stats()
	if s.Cuts != 1 || s.Severed < 1 || s.Refused < 1 || s.Accepted < 4 {
		t.Errorf("stats %+v", s)
	}
}

func TestNotLoopback(t *testing.T) {
	for _, target := range []string{"192.0.2.1:80", "example.com:80", "nope"} {
		if _, err := NewCutter(target); err == nil {
			t.Errorf("NewCutter(%q) succeeded", target)
		}
	}
	if _, err := NewCutter("192.0.2.1:80"); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("err = %v, want ErrNotLoopback", err)
	}
}

func TestCloseEndsConnections(t *testing.T) {
	p, err := NewCutter(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "x\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
}

// While stalled, connections old and new stay open but nothing is
// answered: only the client's own deadline ends its wait. Restore resets
// what the stall left open and serves again.
func TestStallAndRestore(t *testing.T) {
	p, err := NewCutter(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	live, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	r := bufio.NewReader(live)
	if _, err := io.WriteString(live, "a\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("before the stall: %v", err)
	}
	p.Stall()
	if _, err := io.WriteString(live, "b\n"); err != nil {
		t.Fatalf("the live connection refused a write while stalled: %v", err)
	}
	_ = live.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err = r.ReadString('\n')
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a live connection while stalled: %v, want a timeout (no answer, no reset)", err)
	}
	fresh, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("a new connection while stalled was refused: %v", err)
	}
	defer fresh.Close()
	_, _ = io.WriteString(fresh, "c\n")
	_ = fresh.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := bufio.NewReader(fresh).ReadString('\n'); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a new connection while stalled: %v, want a timeout", err)
	}

	p.Restore()
	_ = live.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("the stalled connection after Restore: %v, want it reset", err)
	}
	if err := roundTrip(p.Addr()); err != nil {
		t.Fatalf("after the restore: %v", err)
	}
	if s := p.Stats(); s.Stalls != 1 {
		t.Errorf("stats %+v, want 1 stall", s)
	}
}

// greeter serves on a fresh loopback port and writes hello to every
// connection.
func greeter(t *testing.T, hello string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte(hello))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// Retarget sends new connections to the new target and resets the old
// ones; a target off loopback is refused.
func TestRetarget(t *testing.T) {
	p, err := NewCutter(greeter(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	hello := func(c net.Conn) (string, error) {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 1)
		_, err := io.ReadFull(c, b)
		return string(b), err
	}
	old, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got, err := hello(old); got != "a" || err != nil {
		t.Fatalf("before Retarget: %q, %v; want a", got, err)
	}
	if err := p.Retarget(greeter(t, "b")); err != nil {
		t.Fatal(err)
	}
	if got, err := hello(old); err == nil {
		t.Errorf("the old connection still reads %q after Retarget", got)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := hello(c); got != "b" || err != nil {
		t.Errorf("after Retarget: %q, %v; want b", got, err)
	}
	if err := p.Retarget("192.0.2.1:6379"); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("Retarget off loopback: %v, want ErrNotLoopback", err)
	}
}
