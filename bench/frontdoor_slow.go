package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// slowResult is one row of the slow-body table.
type slowResult struct {
	mode        string
	tries, ok   int
	other       map[string]int
	retryAfters []int // the Retry-After of each refusal, in seconds
	attackers   map[int]int
}

// runSlow runs the slow-body attack, perHost connections from each of
// hosts addresses, against a service in mode while the sender posts for
// d from the next address.
func runSlow(ctx context.Context, s *section, mode string, d time.Duration, hosts, perHost int) (slowResult, error) {
	res := slowResult{mode: mode, other: map[string]int{}}
	srv, addr, err := startServer(mode)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	a := startSlowBodies(addr, hosts, perHost)
	stopped := false
	defer func() {
		if !stopped {
			a.stop()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for a.started.Load() < int64(hosts*perHost) && time.Now().Before(deadline) {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return res, err
		}
	}
	if err := sleepCtx(ctx, time.Second); err != nil {
		return res, err
	}
	s.o.logf("frontdoor: slow bodies, %s: %d started, sending", mode, a.started.Load())
	victim := &net.Dialer{LocalAddr: &net.TCPAddr{IP: fdHost(hosts)}}
	hc := &http.Client{Transport: &http.Transport{DialContext: victim.DialContext}, Timeout: 10 * time.Second}
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
