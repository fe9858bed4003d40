package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/hashicorp/go-retryablehttp"
)

// Section 5: M senders each deliver one webhook event to a receiver that is
// down (connections refused) for the first outageDown of virtual time and
// then admits at most C requests per second (a token bucket with a burst of
// C/10), answering the excess 503. Every sender retries until its event is
// delivered; the arrivals per second at the receiver show the synchronized
// storm of unjittered retries against the spread of jittered ones.

// outageVariant is one sender's retry schedule.
type outageVariant struct {
	name string
	file string // figure name stem
	// next returns the delay before retry n (1-based), given the previous
	// delay and the answer to the last attempt (nil: connection refused).
	next func(prev time.Duration, n int, resp *http.Response, v *outageSim) time.Duration
	// maxAttempts is the library's default limit of attempts in all.
	maxAttempts int
}

func clientVariant(st client.Strategy) outageVariant {
	b := client.Backoff{Strategy: st} // the sender's defaults: base 500 ms, cap 30 s
	return outageVariant{
		name: "client " + strategyLabel(st),
		file: st.String(),
		next: func(prev time.Duration, n int, resp *http.Response, v *outageSim) time.Duration {
			if d, ok := retryAfter(resp); ok { // the sender prefers Retry-After (clamped to 60 s)
				return min(d, clientMaxRetryAfter)
			}
			return b.Next(prev, n, v.rnd)
		},
		maxAttempts: clientMaxAttempts,
	}
}

// The sender's defaults the simulation follows, as package client documents
// them on Config.MaxAttempts, Config.MaxRetryAfter and Backoff.
const (
	clientMaxAttempts   = 6
	clientMaxRetryAfter = time.Minute
	clientBase          = 500 * time.Millisecond
	clientCap           = 30 * time.Second
)

// retryablehttpDefaults are go-retryablehttp's RetryWaitMin, RetryWaitMax
// and RetryMax defaults (v0.7.8).
const (
	rhWaitMin  = 1 * time.Second
	rhWaitMax  = 30 * time.Second
	rhRetryMax = 4
)

var retryableHTTPVariant = outageVariant{
	name: "go-retryablehttp DefaultBackoff",
	file: "retryablehttp",
	next: func(_ time.Duration, n int, resp *http.Response, _ *outageSim) time.Duration {
		// retryablehttp's Client.Do passes attempt numbers from 0.
		return retryablehttp.DefaultBackoff(rhWaitMin, rhWaitMax, n-1, resp)
	},
	maxAttempts: rhRetryMax + 1,
}

func outageVariants() []outageVariant {
	v := []outageVariant{}
	for _, st := range occStrategies {
		v = append(v, clientVariant(st))
	}
	return append(v, retryableHTTPVariant)
}

func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	s, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0, false
	}
	return time.Duration(s) * time.Second, true
}

type outageParams struct {
	events     int
	capacity   int           // requests per second once recovered
	down       time.Duration // the receiver refuses connections in [0, down)
	spread     time.Duration // first attempts are uniform in [0, spread)
	retryAfter int           // seconds of Retry-After on the 503s; 0: none
	seed       uint64
}

type outageSim struct {
	p   outageParams
	rnd *rand.Rand
}

type outageResult struct {
	arrivals  []int // per virtual second at the receiver, refused ones included
	delivered []int // deliveries per virtual second
	attempts  int
	end       time.Duration // when the last event was delivered (answer received)
	firstOK   time.Duration // first delivery
	withinMax int           // events delivered within the variant's default attempt limit
	peak      int           // most arrivals in one second after the recovery
}

const (
	outArrive uint8 = iota // an attempt arrives at the receiver
	outRefused
	outRejected
	outAccepted
)

func simulateOutage(v outageVariant, vi int, p outageParams) outageResult {
	sim := &outageSim{p: p, rnd: newRand(p.seed, 0x07a6e, uint64(vi))}
	net := newNetwork(10*time.Millisecond, 2*time.Millisecond, sim.rnd)
	type sender struct {
		attempt int
		prev    time.Duration
	}
	senders := make([]sender, p.events)
	var h eventHeap
	for i := range senders {
		start := int64(sim.rnd.Float64() * float64(p.spread))
		h.push(start+net.delay(), int32(i), outArrive)
		senders[i].attempt = 1
	}
	var res outageResult
	bump := func(bins *[]int, at int64) {
		sec := int(at / int64(time.Second))
		for len(*bins) <= sec {
			*bins = append(*bins, 0)
		}
		(*bins)[sec]++
	}
	rate := float64(p.capacity) / float64(time.Second) // tokens per ns
	burst := math.Max(1, float64(p.capacity)/10)
	tokens, last := burst, int64(p.down)
	resp503 := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}}
	if p.retryAfter > 0 {
		resp503.Header.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	for h.len() > 0 {
		e := h.pop()
		s := &senders[e.client]
		switch e.kind {
		case outArrive:
			res.attempts++
			bump(&res.arrivals, e.at)
			kind := outRefused
			if e.at >= int64(p.down) {
				tokens = math.Min(burst, tokens+float64(e.at-last)*rate)
				last = e.at
				kind = outRejected
				if tokens >= 1 {
					tokens--
					kind = outAccepted
				}
			}
			h.push(e.at+net.delay(), e.client, kind)
		case outAccepted:
			bump(&res.delivered, e.at)
			res.end = time.Duration(e.at)
			if res.firstOK == 0 {
				res.firstOK = res.end
			}
			if s.attempt <= v.maxAttempts {
				res.withinMax++
			}
		default: // refused or 503: retry
			var resp *http.Response
			if e.kind == outRejected {
				resp = resp503
			}
			s.prev = v.next(s.prev, s.attempt, resp, sim)
			s.attempt++
			h.push(e.at+int64(s.prev)+net.delay(), e.client, outArrive)
		}
	}
	for sec := int(p.down / time.Second); sec < len(res.arrivals); sec++ {
		res.peak = max(res.peak, res.arrivals[sec])
	}
	return res
}

func runOutage(ctx context.Context, s *section) error {
	o := s.o
	p := outageParams{events: o.outageEvents, capacity: o.outageCapacity, down: o.outageDown, spread: o.outageSpread, seed: o.seed}
	variants := outageVariants()
	results := make([]outageResult, len(variants))
	withRA := make([]outageResult, len(variants))
	for i, v := range variants {
		if err := ctx.Err(); err != nil {
			return err
		}
		results[i] = simulateOutage(v, i, p)
		pra := p
		pra.retryAfter = 1
		withRA[i] = simulateOutage(v, i, pra)
	}

	ideal := o.outageDown + time.Duration(float64(o.outageEvents)/float64(o.outageCapacity)*float64(time.Second))
	s.line("%d senders each deliver one event; their first attempts are spread uniformly over the first %v. The receiver refuses", p.events, p.spread)
	s.line("connections for the first %v of virtual time, then admits at most %d requests/s (a token bucket with a burst of %d) and", p.down, p.capacity, max(1, p.capacity/10))
	s.line("answers the excess **503 without Retry-After** (the main table and the figures; a second table repeats the run with `Retry-After: 1`).")
	s.line("Every hop takes |N(10 ms, 2 ms)|. Senders retry until delivered, without an attempt limit, so that the schedules can be compared;")
	s.line("the last column counts the events that the library's default attempt limit would have delivered (package client: %d attempts in all;", clientMaxAttempts)
	s.line("go-retryablehttp: RetryMax %d, 5 attempts). Package client's variants use its default backoff (base %v, cap %v, multiplier 3 for", rhRetryMax, clientBase, clientCap)
	s.line("decorrelated, 2 otherwise) through `client.Backoff.Next`; go-retryablehttp's row calls `retryablehttp.DefaultBackoff(1s, 30s, attempt, resp)`")
	s.line("directly, with its defaults, as its `Client.Do` would (no HTTP). Seed %d. Were the senders perfectly coordinated, the last", o.seed)
	s.line("event would be delivered at %.0f s.", ideal.Seconds())
	s.line("")
	rows := func(rs []outageResult) [][]string {
		var out [][]string
		for i, r := range rs {
			var atRecovery int
			if sec := int(p.down / time.Second); sec < len(r.arrivals) {
				atRecovery = r.arrivals[sec]
			}
			out = append(out, []string{
				variants[i].name, fmt.Sprint(r.attempts), fmt.Sprint(atRecovery), fmt.Sprint(r.peak),
				fmt.Sprintf("%.1f", r.end.Seconds()), fmt.Sprintf("%d / %d", r.withinMax, p.events),
			})
		}
		return out
	}
	header := []string{"variant", "attempts", fmt.Sprintf("arrivals in [%v, %v+1s)", p.down, p.down), "peak arrivals/s after recovery",
		"all delivered at (s)", "delivered within default attempt limit"}
	s.table(header, rows(results))
	s.line("In this model a refusal or a 503 costs the receiver nothing, which flatters \"no backoff\": its senders finish close to the ideal")
	s.line("time only because the receiver absorbs %d attempts, a sustained %d arrivals/s, without slowing down. A real receiver that has",
		results[0].attempts, results[0].peak)
	s.line("just come back would spend its capacity on them. The unjittered schedules (package client's exponential and go-retryablehttp's")
	s.line("default, which is the same doubling from 1 s) arrive as one synchronized wave every cap interval, each admitting about one")
	s.line("second's capacity; the jittered ones spread the senders out, so the receiver works through the backlog at its capacity.")
	s.line("")

	var all []series
	horizon := 0
	for _, r := range results {
		horizon = max(horizon, len(r.arrivals))
	}
	for i, r := range results {
		sr := series{name: variants[i].name}
		for sec := range horizon {
			v := 0
			if sec < len(r.arrivals) {
				v = r.arrivals[sec]
			}
			sr.x, sr.y = append(sr.x, float64(sec)), append(sr.y, float64(v))
		}
		all = append(all, sr)
	}
	if err := s.figure("outage-arrivals.svg", "arrivals per second at the receiver, every variant", lineChart{
		title: fmt.Sprintf("Receiver down for %v, then %d req/s: arrivals/s", p.down, p.capacity), xLabel: "virtual time (s)",
		yLabel: "arrivals per second (log)", logY: true, series: all,
	}.render()); err != nil {
		return err
	}
	s.line("Per variant, on a linear scale (arrivals and deliveries per second):")
	for i, r := range results {
		arr := all[i]
		del := series{name: "delivered"}
		for sec := range horizon {
			v := 0
			if sec < len(r.delivered) {
				v = r.delivered[sec]
			}
			del.x, del.y = append(del.x, float64(sec)), append(del.y, float64(v))
		}
		arr.name = "arrivals"
		if err := s.figure("outage-"+variants[i].file+".svg", "arrivals per second, "+variants[i].name, lineChart{
			title: variants[i].name, xLabel: "virtual time (s)", yLabel: "per second", series: []series{arr, del},
		}.render()); err != nil {
			return err
		}
	}
	s.line("**The same, with `Retry-After: 1` on every 503** (both libraries prefer it to their computed delay; the refusals during the")
	s.line("outage carry no header):")
	s.line("")
	s.table(header, rows(withRA))

	find := func(name string) outageResult {
		for i, v := range variants {
			if v.name == name {
				return results[i]
			}
		}
		panic(name)
	}
	dec, exp, rh := find("client decorrelated jitter"), find("client exponential, no jitter"), find(retryableHTTPVariant.name)
	s.headline(fmt.Sprintf("Outage %v, %d events, %d req/s: all delivered at", p.down, p.events, p.capacity),
		"decorrelated %.0f s, exponential (no jitter) %.0f s, go-retryablehttp default %.0f s (ideal %.0f s)",
		dec.end.Seconds(), exp.end.Seconds(), rh.end.Seconds(), ideal.Seconds())
	s.headline("Outage: peak arrivals/s after recovery",
		"decorrelated %d, exponential (no jitter) %d, go-retryablehttp default %d (capacity %d)", dec.peak, exp.peak, rh.peak, p.capacity)
	return nil
}
