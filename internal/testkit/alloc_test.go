package testkit

import (
	"errors"
	"sync"
	"testing"
)

var sink []byte

// TestColdEmptiesPools: a call that takes a 1 MiB buffer from a sync.Pool
// allocates it cold (the pool emptied) and not warm (the pool full); a
// call that allocates 1 MiB outright allocates it both ways.
func TestColdEmptiesPools(t *testing.T) {
	const size = 1 << 20
	pool := sync.Pool{New: func() any { b := make([]byte, size); return &b }}
	pooled := func() error {
		b := pool.Get().(*[]byte)
		(*b)[0]++
		pool.Put(b)
		return nil
	}
	cold, warm, err := AllocBytes(pooled)
	if err != nil {
		t.Fatal(err)
	}
	if cold < size || warm >= size {
		t.Errorf("pooled: cold %d, warm %d bytes, want at least %d cold and less warm", cold, warm, size)
	}
	fresh := func() error {
		sink = make([]byte, size)
		return nil
	}
	cold, warm, err = AllocBytes(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if cold < size || warm < size {
		t.Errorf("fresh: cold %d, warm %d bytes, want at least %d each", cold, warm, size)
	}
}

// TestStopsAtError: the first error fn returns is Bytes' error.
func TestStopsAtError(t *testing.T) {
	bad := errors.New("bad")
	n := 0
	_, _, err := AllocBytes(func() error {
		if n++; n == 2 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) || n != 2 {
		t.Errorf("Bytes: %v after %d calls, want %v after 2", err, n, bad)
	}
}
