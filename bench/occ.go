package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/geoidem/geoidem/client"
)

// Section 4 reproduces the simulation of Marc Brooker's AWS Architecture
// Blog post "Exponential Backoff And Jitter" (2015): N clients each update
// one shared row once under optimistic concurrency. A client reads the row's
// version, then writes conditionally on it; the write fails if another
// client wrote in between, and the client backs off and starts over. Every
// hop takes |N(10 ms, 2 ms)|. The delays come from client.Backoff.Next.

const (
	occBase = 5 * time.Millisecond
	occCap  = 2 * time.Second
)

// occStrategies are the article's five curves, in its order of merit
// (worst first).
var occStrategies = []client.Strategy{client.None, client.Exponential, client.EqualJitter, client.FullJitter, client.Decorrelated}

func strategyLabel(s client.Strategy) string {
	switch s {
	case client.None:
		return "no backoff"
	case client.Exponential:
		return "exponential, no jitter"
	case client.FullJitter:
		return "full jitter"
	case client.EqualJitter:
		return "equal jitter"
	case client.Decorrelated:
		return "decorrelated jitter"
	}
	return s.String()
}

const (
	occRead      uint8 = iota // a read arrives at the server
	occReadResp               // its answer arrives at the client
	occWrite                  // a conditional write arrives at the server
	occWriteResp              // its answer arrives at the client
)

// occRun is the outcome of one trial.
type occRun struct {
	writes, reads int   // calls to the server
	end           int64 // virtual ns when the last client finished
}

type occClient struct {
	seen    uint64 // version returned by the last read
	ok      bool   // outcome of the last write
	attempt int
	prev    time.Duration
}

// simulateOCC runs one trial with n clients that all start at time 0.
func simulateOCC(b client.Backoff, n int, seed uint64, coords ...uint64) occRun {
	rnd := newRand(seed, coords...)
	net := newNetwork(10*time.Millisecond, 2*time.Millisecond, rnd)
	clients := make([]occClient, n)
	var h eventHeap
	h.ev = make([]event, 0, n)
	for i := range clients {
		h.push(net.delay(), int32(i), occRead)
	}
	var version uint64
	var r occRun
	for h.len() > 0 {
		e := h.pop()
		c := &clients[e.client]
		switch e.kind {
		case occRead:
			r.reads++
			c.seen = version
			h.push(e.at+net.delay(), e.client, occReadResp)
		case occReadResp:
			h.push(e.at+net.delay(), e.client, occWrite)
		case occWrite:
			r.writes++
			c.ok = c.seen == version
			if c.ok {
				version++
			}
			h.push(e.at+net.delay(), e.client, occWriteResp)
		case occWriteResp:
			if c.ok {
				r.end = e.at
				continue
			}
			c.attempt++
			c.prev = b.Next(c.prev, c.attempt, rnd)
			h.push(e.at+net.delay()+int64(c.prev), e.client, occRead)
		}
	}
	return r
}

// occCell is the mean over the trials of one strategy and one N.
type occCell struct {
	calls, reads float64 // mean writes (the article's "calls") and reads per trial
	time         time.Duration
}

// runOCCGrid simulates every strategy for every N, trials times each, in
// parallel; the result depends only on the seed.
func runOCCGrid(ctx context.Context, ns []int, trials int, seed uint64) ([][]occCell, error) {
	grid := make([][]occCell, len(occStrategies))
	for i := range grid {
		grid[i] = make([]occCell, len(ns))
	}
	type job struct{ s, n int }
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range jobs {
				b := client.Backoff{Strategy: occStrategies[j.s], Base: occBase, Cap: occCap}
				var writes, reads, end float64
				for t := range trials {
					r := simulateOCC(b, ns[j.n], seed, uint64(occStrategies[j.s]), uint64(ns[j.n]), uint64(t))
					writes += float64(r.writes)
					reads += float64(r.reads)
					end += float64(r.end)
				}
				k := float64(trials)
				grid[j.s][j.n] = occCell{calls: writes / k, reads: reads / k, time: time.Duration(end / k)}
			}
		})
	}
	var err error
feed:
	for s := range occStrategies {
		for n := range ns {
			select {
			case jobs <- job{s, n}:
			case <-ctx.Done():
				err = ctx.Err()
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	return grid, err
}

func runOCC(ctx context.Context, s *section) error {
	o := s.o
	ns := o.occClients
	t0 := time.Now()
	grid, err := runOCCGrid(ctx, ns, o.occTrials, o.seed)
	if err != nil {
		return err
	}
	elapsed := time.Since(t0)

	s.line("N clients each update one row once under optimistic concurrency: read the version, then write on the condition that it is")
	s.line("unchanged; a failed write backs off and starts again with a read. Every hop takes |N(10 ms, 2 ms)|; backoff base %v, cap %v;", occBase, occCap)
	s.line("N = %s; %d trials per cell, seed %d (the numbers are a deterministic function of the seed). This is the model of the", intList(ns), o.occTrials, o.seed)
	s.line("simulator published with the AWS Architecture Blog post \"Exponential Backoff And Jitter\" (Marc Brooker, 2015), re-implemented")
	s.line("as a discrete-event simulation in virtual time. The delays come from `client.Backoff{Strategy, Base: 5ms, Cap: 2s}.Next` with a seeded")
	s.line("`*rand.Rand`: the sender's own code. Multipliers are the package defaults: 2 for the exponential strategies, 3 for decorrelated, as in the")
	s.line("article. One difference from the article's script: `client.Backoff` sleeps base × 2^(n-1) before retry n (5 ms first), the script")
	s.line("base × 2^n (10 ms first).")
	s.line("")
	s.line("*Calls* are conditional writes, as in the article (each is preceded by one read, so the server sees twice as many requests);")
	s.line("*time* is the virtual time until the last client has written, both means over the trials. Simulated in %.1f s of real time.", elapsed.Seconds())
	s.line("")

	header := []string{"N"}
	for _, st := range occStrategies {
		header = append(header, strategyLabel(st))
	}
	var callRows, timeRows [][]string
	for j, n := range ns {
		cr, tr := []string{fmt.Sprint(n)}, []string{fmt.Sprint(n)}
		for i := range occStrategies {
			cr = append(cr, fmt.Sprintf("%.0f", grid[i][j].calls))
			tr = append(tr, fmt.Sprintf("%.0f", ms(grid[i][j].time)))
		}
		callRows, timeRows = append(callRows, cr), append(timeRows, tr)
	}
	s.line("**Calls (conditional writes) per trial, mean:**")
	s.line("")
	s.table(header, callRows)
	s.line("**Completion time per trial, mean, ms:**")
	s.line("")
	s.table(header, timeRows)

	var calls, times []series
	for i, st := range occStrategies {
		cs, ts := series{name: strategyLabel(st)}, series{name: strategyLabel(st)}
		for j, n := range ns {
			cs.x, cs.y = append(cs.x, float64(n)), append(cs.y, grid[i][j].calls)
			ts.x, ts.y = append(ts.x, float64(n)), append(ts.y, ms(grid[i][j].time))
		}
		calls, times = append(calls, cs), append(times, ts)
	}
	if err := s.figure("occ-calls.svg", "calls vs N per strategy", lineChart{
		title: "OCC contention: calls per trial", xLabel: "clients N", yLabel: "conditional writes (log)", logY: true, series: calls,
	}.render()); err != nil {
		return err
	}
	if err := s.figure("occ-time.svg", "completion time vs N per strategy", lineChart{
		title: "OCC contention: time until all clients wrote", xLabel: "clients N", yLabel: "virtual ms (log)", logY: true, series: times,
	}.render()); err != nil {
		return err
	}

	// Headline: the largest simulated N.
	j := len(ns) - 1
	idx := func(st client.Strategy) int {
		for i, x := range occStrategies {
			if x == st {
				return i
			}
		}
		panic("unknown strategy")
	}
	none, dec, full, exp := grid[idx(client.None)][j], grid[idx(client.Decorrelated)][j], grid[idx(client.FullJitter)][j], grid[idx(client.Exponential)][j]
	s.headline(fmt.Sprintf("OCC simulation, N = %d: calls", ns[j]),
		"no backoff %.0f, exponential %.0f, full jitter %.0f (%.2f× none), decorrelated %.0f (%.2f× none)",
		none.calls, exp.calls, full.calls, full.calls/none.calls, dec.calls, dec.calls/none.calls)
	s.headline(fmt.Sprintf("OCC simulation, N = %d: completion time", ns[j]),
		"no backoff %.0f ms, exponential %.0f ms, full jitter %.0f ms, decorrelated %.0f ms", ms(none.time), ms(exp.time), ms(full.time), ms(dec.time))
	// The qualitative picture, read off the largest N rather than asserted.
	fewest, most, fastest, slowest := 0, 0, 0, 0
	for i := range occStrategies {
		c := grid[i][j]
		if c.calls < grid[fewest][j].calls {
			fewest = i
		}
		if c.calls > grid[most][j].calls {
			most = i
		}
		if c.time < grid[fastest][j].time {
			fastest = i
		}
		if c.time > grid[slowest][j].time {
			slowest = i
		}
	}
	s.line("At N = %d the most calls are made by %s and the fewest by %s; the shortest completion time is %s's and the longest",
		ns[j], strategyLabel(occStrategies[most]), strategyLabel(occStrategies[fewest]), strategyLabel(occStrategies[fastest]))
	s.line("%s's. Without backoff nobody ever waits, so the row is written as fast as the network allows, at the price of the most work;", strategyLabel(occStrategies[slowest]))
	s.line("exponential backoff without jitter keeps the losers of a round in lockstep, so they collide again after every sleep. The article")
	s.line("reports the same shape: jitter cuts the work to a small multiple of N, full jitter slightly below decorrelated, and exponential")
	s.line("backoff without jitter is the clear loser in time.")
	if len(ns) >= 3 {
		s.line("")
		s.line("Growth of the calls with N (least-squares slope of log(calls) against log(N) over N ≥ %d; 2 is quadratic):", ns[len(ns)/2])
		var parts []string
		for i, st := range occStrategies {
			var x, y []float64
			for k := len(ns) / 2; k < len(ns); k++ {
				x, y = append(x, float64(ns[k])), append(y, grid[i][k].calls)
			}
			parts = append(parts, fmt.Sprintf("%s %.2f", strategyLabel(st), slope(x, y)))
		}
		s.line("%s.", strings.Join(parts, ", "))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func intList(ns []int) string {
	if len(ns) > 3 && ns[1]-ns[0] == ns[len(ns)-1]-ns[len(ns)-2] {
		step := ns[1] - ns[0]
		regular := true
		for i := 1; i < len(ns); i++ {
			regular = regular && ns[i]-ns[i-1] == step
		}
		if regular {
			return fmt.Sprintf("%d to %d in steps of %d", ns[0], ns[len(ns)-1], step)
		}
	}
	return fmt.Sprint(ns)
}
