package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The many-address attacks: each against the service as frontdoor.New
// wires it ("one"), while a sender on its own address posts
// a small body every 100 ms and a known provider (fdProviderNet) posts
// 1 MB bodies from 4 connections.
type manyAttack struct {
	name    string
	kind    string // slowbody, slowread, noarrive
	hosts   int
	perHost int
}

var manyAttacks = []manyAttack{
	{"64 addresses × 1 header-only slow body", "slowbody", 64, 1},
	{"256 addresses × 1 header-only slow body", "slowbody", 256, 1},
	{"8 × 8 slow-read POSTs (61 KB answer never read)", "slowread", 8, 8},
	{"256 × 8 bodies that never arrive", "noarrive", 256, 8},
}

// manyResult is one row of the many-address table.
type manyResult struct {
	tries, ok     int
	other         map[string]int
	provTries     int
	provOK        int
	provCut       int
	provOther     map[string]int
	attackerBytes int64
	took          time.Duration
	peakRSS       int64
}

// fdManyHost is the loopback source address of attacking host i: 127.1.y.z.
func fdManyHost(i int) net.IP { return net.IPv4(127, 1, byte(i/250), byte(1+i%250)) }

// runMany runs the attacks given against a service in mode for d each, all
// at once when together.
//
// With fresh, the sender opens a new connection for each post.
func runMany(ctx context.Context, mode string, attacks []manyAttack, d time.Duration, fresh bool) (manyResult, error) {
	res := manyResult{other: map[string]int{}, provOther: map[string]int{}}
	srv, addr, err := startServer(mode)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var sent atomic.Int64
	offset := 0
	for _, a := range attacks {
		for h := range a.hosts {
			dl := &net.Dialer{LocalAddr: &net.TCPAddr{IP: fdManyHost(offset + h)}, Timeout: 5 * time.Second}
			if a.kind == "slowread" {
				dl.Control = func(_, _ string, rc syscall.RawConn) error {
					return rc.Control(func(fd uintptr) {
						_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
						_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 1460)
					})
				}
			}
			for i := range a.perHost {
				wg.Go(func() {
					for n := 0; actx.Err() == nil; n++ {
						manyOnce(actx, dl, addr, a.kind, fmt.Sprintf("%s-%d-%d-%d", a.kind, h, i, n), &sent)
					}
				})
			}
		}
		offset += a.hosts
	}
	defer func() { cancel(); wg.Wait() }()
	if err := sleepCtx(ctx, 3*time.Second); err != nil { // the attack under way
		return res, err
	}
	began := time.Now()
	sent.Store(0)
	var pwg sync.WaitGroup
	var pmu sync.Mutex
	pctx, pcancel := context.WithTimeout(ctx, d)
	defer pcancel()
	big := bytes.Repeat([]byte(" "), 1<<20)
	copy(big, `{"type":"Feature","id":"p","geometry":null,"properties":null}`)
	for w := range 4 {
		pwg.Go(func() {
			dl := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 2, 0, 1)}}
			hc := &http.Client{Transport: &http.Transport{DialContext: dl.DialContext}, Timeout: 30 * time.Second}
			defer hc.CloseIdleConnections()
			for n := 0; pctx.Err() == nil; n++ {
				code, err := manyPost(hc, addr, fmt.Sprintf("prov-%d-%d", w, n), big)
				pmu.Lock()
				res.provTries++
				switch {
				case err != nil && pctx.Err() != nil:
					res.provTries--
				case err != nil:
					res.provOther[shortErr(err)]++
				case code/100 == 2:
					res.provOK++
				case code == http.StatusRequestTimeout:
					res.provCut++
					res.provOther[strconv.Itoa(code)]++
				default:
					res.provOther[strconv.Itoa(code)]++
				}
				pmu.Unlock()
			}
		})
	}
	dl := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 250)}}
	hc := &http.Client{Transport: &http.Transport{DialContext: dl.DialContext, DisableKeepAlives: fresh}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for pctx.Err() == nil {
		res.tries++
		body := `{"type":"Feature","id":"v` + strconv.Itoa(res.tries) + `","geometry":null,"properties":null}`
		code, err := manyPost(hc, addr, "victim-"+strconv.Itoa(res.tries), []byte(body))
		switch {
		case err != nil:
			res.other[shortErr(err)]++
		case code/100 == 2:
			res.ok++
		default:
			res.other[strconv.Itoa(code)]++
		}
		_ = sleepCtx(pctx, 100*time.Millisecond)
	}
	pwg.Wait()
	res.took = time.Since(began)
	res.attackerBytes = sent.Load()
	res.peakRSS = procStatus(srv.cmd.Process.Pid, "VmHWM")
	return res, nil
}

// manyPost posts body with key and returns the status.
func manyPost(hc *http.Client, addr, key string, body []byte) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/features", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// manyOnce makes one attacking request of kind on a new connection and
// waits for its end, counting the bytes sent.
func manyOnce(ctx context.Context, d *net.Dialer, addr, kind, key string, sent *atomic.Int64) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		_ = sleepCtx(ctx, 50*time.Millisecond)
		return
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var head string
	switch kind {
	case "slowread":
		body := `{"type":"Feature"}`
		head = fmt.Sprintf("POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: %s\r\nX-Big: 1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body)
	default:
		head = fmt.Sprintf("POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", key)
	}
	n, err := io.WriteString(c, head)
	sent.Add(int64(n) + 60) // and the TCP handshake and close, roughly
	if err != nil {
		return
	}
	switch kind {
	case "slowread": // never read: wait until the server closes
		for ctx.Err() == nil && !isDead(c) {
			if err := sleepCtx(ctx, time.Second); err != nil {
				return
			}
		}
	case "slowbody":
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
					sent.Add(1)
				}
			}
		}()
		_, _ = http.ReadResponse(bufio.NewReader(c), nil)
	default: // noarrive: wait for the answer or the close
		_, _ = http.ReadResponse(bufio.NewReader(c), nil)
	}
}

// isDead reports whether the server has closed c: a write of one byte
// fails (a reset after the server's close).
func isDead(c net.Conn) bool {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, err := c.Write([]byte("\r\n"))
	return err != nil && !strings.Contains(err.Error(), "timeout")
}
