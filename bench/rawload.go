package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// The load generator of section 1, in the manner of wrk: every client is one
// keep-alive HTTP/1.1 connection that writes its requests from one reused
// buffer and parses the answers in place, so that a request costs the client
// no allocation (TestRawClientAllocs pins it at zero). The process's
// allocations during a measurement are then the server's own: the whole
// server (net/http, the middleware, the store and its Redis or PostgreSQL
// client), as wrk would see it from outside, counted by runtime.MemStats.

// rawConn is one client connection.
type rawConn struct {
	c    net.Conn
	br   *bufio.Reader
	head []byte // the request up to the key's value
	tail []byte // from the end of the key to the end of the body
	req  []byte // scratch: head, key, tail
}

// dialRaw connects to addr (host:port) for POSTs of body to path, each with
// an Idempotency-Key header (whose value is appended per request).
func dialRaw(ctx context.Context, addr, path, body string) (*rawConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	head := "POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/geo+json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nIdempotency-Key: "
	return &rawConn{c: c, br: bufio.NewReaderSize(c, 16<<10), head: []byte(head), tail: []byte("\r\n\r\n" + body),
		req: make([]byte, 0, len(head)+256+len(body))}, nil
}

func (rc *rawConn) Close() error { return rc.c.Close() }

var (
	statusPrefix  = []byte("HTTP/1.1 ")
	contentLength = []byte("content-length:")
	replayedTrue  = []byte("idempotent-replayed: true")
	chunked       = []byte("transfer-encoding:")
)

// hasPrefixFold reports whether line begins with prefix, which is lower case,
// ignoring the case of ASCII letters in line.
func hasPrefixFold(line, prefix []byte) bool {
	if len(line) < len(prefix) {
		return false
	}
	for i, c := range prefix {
		l := line[i]
		if 'A' <= l && l <= 'Z' {
			l += 'a' - 'A'
		}
		if l != c {
			return false
		}
	}
	return true
}

// do sends one request with the key appendKey appends and reads its
// answer, which must be 201 with Idempotent-Replayed: true exactly when
// wantReplay. It allocates nothing on success.
func (rc *rawConn) do(appendKey func([]byte) []byte, wantReplay bool) error {
	rc.req = append(rc.req[:0], rc.head...)
	rc.req = appendKey(rc.req)
	rc.req = append(rc.req, rc.tail...)
	if _, err := rc.c.Write(rc.req); err != nil {
		return err
	}
	line, err := rc.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, statusPrefix) || len(line) < len(statusPrefix)+3 {
		return fmt.Errorf("bad status line %q", line)
	}
	status := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	length, replayed := -1, false
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		switch {
		case hasPrefixFold(line, contentLength):
			n, ok := parseDigits(bytes.TrimSpace(line[len(contentLength):]))
			if !ok {
				return fmt.Errorf("bad Content-Length %q", line)
			}
			length = n
		case hasPrefixFold(line, replayedTrue):
			replayed = true
		case hasPrefixFold(line, chunked):
			return fmt.Errorf("unsupported %q", line)
		}
	}
	if length < 0 {
		return errors.New("answer without Content-Length")
	}
	if status != 201 {
		body := make([]byte, min(length, 200))
		_, _ = io.ReadFull(rc.br, body)
		return fmt.Errorf("status %d: %s", status, body)
	}
	if _, err := rc.br.Discard(length); err != nil {
		return err
	}
	if replayed != wantReplay {
		return fmt.Errorf("Idempotent-Replayed %v, want %v", replayed, wantReplay)
	}
	return nil
}

// parseDigits parses a non-negative decimal number of at most 9 digits.
func parseDigits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// measurement is one bounded run of requests against one server.
type measurement struct {
	n       int
	wall    time.Duration
	lat     []time.Duration // sorted
	mallocs uint64          // heap allocations in the process during the run
	cpu     time.Duration   // CPU time of the process during the run
	cpuOK   bool            // cpu was measured
	server  time.Duration   // CPU time of the store's server during the run
	srvOK   bool            // server was measured
}

func (m measurement) rps() float64 { return float64(m.n) / m.wall.Seconds() }

// allocs is the number of heap allocations per request.
func (m measurement) allocs() float64 { return float64(m.mallocs) / float64(m.n) }

// perReq is d per request, in microseconds.
func (m measurement) perReq(d time.Duration) float64 {
	return float64(d) / float64(time.Microsecond) / float64(m.n)
}

// warmUp is the requests per client that measure sends, unmeasured,
// before it measures.
const warmUp = 2

// measure runs conc clients against the server at addr until maxReq
// requests are done or maxTime has passed, whichever comes first, after a
// warm-up of 2 requests per client that opens the connections. appendKey
// appends the key of request i. server, if not nil, measures the CPU time
// of the store's server.
func measure(ctx context.Context, addr string, conc, maxReq int, maxTime time.Duration, appendKey func(dst []byte, i int64) []byte, wantReplay bool, server cpuGauge) (measurement, error) {
	conns := make([]*rawConn, conc)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for w := range conns {
		c, err := dialRaw(ctx, addr, "/features", feature)
		if err != nil {
			return measurement{}, err
		}
		conns[w] = c
	}
	// Cancelling ctx unblocks the connections.
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.c.SetDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	lat := make([]time.Duration, maxReq) // request base+1+j's latency at j
	var base int64
	phase := func(limit int64, deadline time.Time, record bool) {
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() {
				var i int64
				key := func(dst []byte) []byte { return appendKey(dst, i) }
				for failed.Load() == nil && ctx.Err() == nil {
					i = next.Add(1)
					if i > limit || (record && time.Now().After(deadline)) {
						return
					}
					t0 := time.Now()
					if err := c.do(key, wantReplay); err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
					if record {
						lat[i-base-1] = time.Since(t0)
					}
				}
			})
		}
		wg.Wait()
	}
	phase(int64(warmUp*conc), time.Time{}, false)
	base = next.Load()
	var serverEnd func() (time.Duration, bool)
	if server != nil {
		serverEnd = server(ctx)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0, cpuOK := testkit.ProcessCPU()
	start := time.Now()
	phase(base+int64(maxReq), start.Add(maxTime), true)
	m := measurement{wall: time.Since(start)}
	cpu1, _ := testkit.ProcessCPU()
	runtime.ReadMemStats(&m1)
	m.cpu, m.cpuOK = cpu1-cpu0, cpuOK
	if serverEnd != nil {
		m.server, m.srvOK = serverEnd()
	}
	if err := ctx.Err(); err != nil {
		return m, err
	}
	if p := failed.Load(); p != nil {
		return m, *p
	}
	// Requests that were counted but not sent (the deadline passed) left
	// zeros; every sent request took more than 0 ns.
	m.lat = slices.DeleteFunc(lat, func(d time.Duration) bool { return d == 0 })
	slices.Sort(m.lat)
	m.n = len(m.lat)
	m.mallocs = m1.Mallocs - m0.Mallocs
	return m, nil
}
