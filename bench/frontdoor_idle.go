package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

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
