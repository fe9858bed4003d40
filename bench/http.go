package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// Section 1: what the middleware costs over loopback HTTP, against the bare
// handler and against hand-written handlers that make the same store round
// trips themselves.

// pct returns the p-th percentile (0 < p ≤ 100) by the nearest-rank method.
func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(lat)))) - 1
	return lat[max(0, min(i, len(lat)-1))]
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns + 16, MaxIdleConnsPerHost: conns + 16, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
}

// post sends the feature with key (none if empty) and checks the answer: 201,
// replayed or not as wanted.
func post(ctx context.Context, c *http.Client, url, key string, wantReplay bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(feature))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/geo+json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	if replayed := resp.Header.Get("Idempotent-Replayed") == "true"; key != "" && replayed != wantReplay {
		return fmt.Errorf("Idempotent-Replayed %v, want %v", replayed, wantReplay)
	}
	return nil
}

// httpTarget is one server of section 1.
type httpTarget struct {
	name     string
	h        http.Handler
	baseline string   // name of the hand-written baseline to compare with
	hand     bool     // this is a hand-written baseline
	server   cpuGauge // the CPU time of its store's server, if it has one
}

func wrap(store keystore.Store, cfg middleware.Config, h http.Handler) (http.Handler, error) {
	m, err := middleware.New(store, cfg)
	if err != nil {
		return nil, err
	}
	return m.Handler(h), nil
}

// targetNamed returns the target called name.
func targetNamed(targets []httpTarget, name string) httpTarget {
	for _, t := range targets {
		if t.name == name {
			return t
		}
	}
	panic("bench: no target " + name)
}

// cpuText is the median of per-round CPU times per request, in µs, or "–"
// where they were not measured.
func cpuText(us []float64) string {
	if len(us) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f µs", median(us))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", ms(d))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func runHTTP(ctx context.Context, s *section) (err error) {
	o := s.o
	sv, rs, ps, err := openStores(ctx, o)
	if err != nil {
		return err
	}
	defer func() { ps.Close(); err = errors.Join(err, sv.close(ctx)) }()

	targets := []httpTarget{{name: "memstore"},
		{name: "redisstore", baseline: "Redis by hand", server: sv.redisCPU}, {name: "Redis by hand", hand: true, server: sv.redisCPU},
		{name: "pgstore", baseline: "PostgreSQL by hand", server: sv.postgresCPU}, {name: "PostgreSQL by hand", hand: true, server: sv.postgresCPU}}
	stores := map[string]keystore.Store{"memstore": memstore.New(httpMemstoreConfig(o)), "redisstore": rs, "pgstore": ps}
	for i := range targets {
		t := &targets[i]
		switch t.name {
		case "Redis by hand":
			t.h = sv.redisByHand()
		case "PostgreSQL by hand":
			t.h = sv.pgByHand()
		default:
			if t.h, err = wrap(stores[t.name], middleware.Config{}, ingestHandler); err != nil {
				return err
			}
		}
	}
	bare := httptest.NewServer(ingestHandler)
	defer bare.Close()
	servers := map[string]*httptest.Server{}
	for _, t := range targets {
		srv := httptest.NewServer(t.h)
		defer srv.Close()
		servers[t.name] = srv
	}

	// The machine may be shared: measure in rounds, each round every
	// handler once in turn, and take medians over the rounds, so that a
	// burst of load elsewhere hits one round of every handler rather than
	// every round of one.
	type cell struct {
		runs  []measurement
		lat   []time.Duration // all rounds, sorted
		rps   float64         // median over the rounds
		ratio []float64       // per round: throughput ÷ that round's bare
		p99   []float64       // per round: p99 latency ÷ that round's bare p99
		vsBL  []float64       // per round: throughput ÷ that round's baseline
		alloc []float64       // per round: heap allocations per request
		cpu   []float64       // per round: the process's CPU µs per request
		srv   []float64       // per round: the store server's CPU µs per request
	}
	modes := []string{"first call", "replay"}
	results := map[string]*cell{} // name|mode|conc; name "bare" for the bare handler, aaName for its A/A control
	cellKey := func(name, mode string, conc int) string { return name + "|" + mode + "|" + strconv.Itoa(conc) }
	rounds := max(1, o.httpRounds)
	perTime := o.httpTime / time.Duration(rounds)
	for _, conc := range o.clients {
		perReq := o.perRound(conc)
		hot := map[string]string{}
		for _, t := range targets {
			url := servers[t.name].URL + "/features"
			hot[t.name] = fmt.Sprintf("%s-%d-%s-hot", sv.id, conc, strings.ReplaceAll(t.name, " ", "_"))
			if err := post(ctx, http.DefaultClient, url, hot[t.name], false); err != nil {
				return fmt.Errorf("%s: first call of the replayed key: %w", t.name, err)
			}
		}
		for round := range rounds {
			o.logf("http: %d clients, round %d of %d", conc, round+1, rounds)
			for _, st := range roundOrder(round) {
				addr := bare.Listener.Addr().String()
				var server cpuGauge
				key := func(dst []byte, i int64) []byte { return strconv.AppendInt(append(dst, "bare-"...), i, 10) }
				if !isBare(st.name) {
					addr = servers[st.name].Listener.Addr().String()
					server = targetNamed(targets, st.name).server
					prefix := fmt.Sprintf("%s-%d-%d-%s-", sv.id, conc, round, strings.ReplaceAll(st.name, " ", "_"))
					key = func(dst []byte, i int64) []byte { return strconv.AppendInt(append(dst, prefix...), i, 10) }
					if st.mode == "replay" {
						h := hot[st.name]
						key = func(dst []byte, _ int64) []byte { return append(dst, h...) }
					}
				}
				m, err := measure(ctx, addr, conc, perReq, stepTime(st, perTime), key, st.mode == "replay", server)
				if err != nil {
					return fmt.Errorf("%s, %s, %d clients: %w", st.name, st.mode, conc, err)
				}
				k := cellKey(st.name, st.mode, conc)
				if results[k] == nil {
					results[k] = &cell{}
				}
				results[k].runs = append(results[k].runs, m)
			}
		}
	}
	for k, c := range results {
		parts := strings.Split(k, "|")
		conc, _ := strconv.Atoi(parts[2])
		var rps []float64
		for i, m := range c.runs {
			rps = append(rps, m.rps())
			c.alloc = append(c.alloc, m.allocs())
			if m.cpuOK {
				c.cpu = append(c.cpu, m.perReq(m.cpu))
			}
			if m.srvOK {
				c.srv = append(c.srv, m.perReq(m.server))
			}
			c.lat = append(c.lat, m.lat...)
			bareRun := results[cellKey("bare", "", conc)].runs[i]
			c.ratio = append(c.ratio, m.rps()/bareRun.rps())
			c.p99 = append(c.p99, float64(pct(m.lat, 99))/float64(pct(bareRun.lat, 99)))
			for _, t := range targets {
				if t.name == parts[0] && t.baseline != "" {
					c.vsBL = append(c.vsBL, m.rps()/results[cellKey(t.baseline, parts[1], conc)].runs[i].rps())
				}
			}
		}
		slices.Sort(c.lat)
		c.rps = median(rps)
	}

	s.line("Each server is an `httptest.Server` on 127.0.0.1. The load generator works like wrk: every client is one keep-alive TCP")
	s.line("connection, driven by its own goroutine, that writes each request from a reused buffer and parses the answer in place, sending")
	s.line("the next request as soon as its last one is answered; it allocates nothing per request. Every measurement stops at %d requests", o.requestsAt(1))
	s.line("(at more clients %d, so that the p99 of a round spans many batches of concurrent requests) or after %v (%v for the", o.requestsAt(2), o.httpTime, stepTime(memGroup[0], o.httpTime))
	s.line("bare handler and memstore, which the request bound stops on a quiet machine), whichever comes first, after a warm-up of %d", warmUp)
	s.line("requests per client. The body is a %d-byte Point Feature; the handler reads it and answers", len(feature))
	s.line("201 with a small JSON document. The middleware runs with its default Config (no validator: this is the idempotency cost alone).")
	s.line("memstore holds up to %d keys (`MaxEntries`, twice the %d the section makes at most; its other limits are the defaults), so", httpMemstoreConfig(o).MaxEntries, httpStoreKeys(o))
	s.line("that it is never full and its client bound never counts.")
	s.line("*First call*: every request a new key (claim, handler, record). *Replay*: one key, completed before the measurement, sent by")
	s.line("every request (claim finds the record; the handler does not run). Every answer is checked: 201, and `Idempotent-Replayed: true`")
	s.line("exactly for replays. The bare handler gets the same requests, a new key header on each, so only the middleware differs.")
	s.line("")
	s.line("*allocs/req* is the whole server's heap allocations per request: `runtime.MemStats.Mallocs` before and after the measured requests")
	s.line("(after the warm-up), divided by the requests. Server and load generator share the process, but the generator allocates nothing")
	s.line("per request (`TestRawClientAllocs`), so the count is the server's: net/http, the middleware, the store and its Redis or PostgreSQL")
	s.line("client, as a count of the server process under wrk would be. It is the median over the rounds; it varies little between rounds.")
	s.line("")
	s.line("*CPU/req* is the process's CPU time (user and system, `getrusage`) during the measured requests, per request: the server's")
	s.line("and the load generator's, which does the same work for every handler, so a handler's CPU cost is its CPU/req less the bare")
	s.line("handler's in the same row group. *server CPU/req* is the store server's: Redis's own count (`INFO cpu`), or the CPU time of every")
	s.line("process `pg_stat_activity` lists, backends and WAL writer included, read from `/proc` (in 10 ms ticks). Both are medians over the")
	s.line("rounds. Another process's load on the machine changes CPU time far less than req/s. At 1 client it also counts the Go scheduler")
	s.line("spinning while a request waits on a round trip, so a handler that waits longer shows more: compare it within one client count.")
	s.line("")
	s.line("- **redisstore**: Redis %s, go-redis v9 default pool, a random key prefix removed afterwards. **Redis by hand**: the bare handler", o.redisAddr)
	s.line("  doing `SET key - NX PX 30000 GET` before (one round trip; a replay gets the record from it) and `SET key record PX` after.")
	s.line("- **pgstore**: PostgreSQL (`%s`), pgxpool with %d connections, a fresh table with a random name, dropped afterwards.", o.postgresURL, pgPoolSize)
	s.line("  **PostgreSQL by hand**: the bare handler doing one `INSERT … ON CONFLICT DO NOTHING` claim (which also reads an existing row,")
	s.line("  so that a replay is one statement, as with pgstore) and one `UPDATE` completion, with pgx on the same pool, on a table")
	s.line("  with the columns key, expires_at, status, body and, like pgstore's, an index on expires_at.")
	s.line("- The hand-written handlers skip everything else the middleware does (fingerprint, scoped and hashed keys, lease renewal, header")
	s.line("  filtering, problem documents, fencing tokens): their cost is the inherent cost of the store round trips.")
	s.line("")
	s.line("The run is split into %d rounds (each measurement above is per round: at most %d requests, %d at more clients, or %v, %v", rounds,
		max(1, o.requestsAt(1)/rounds), max(1, o.requestsAt(2)/rounds), perTime, stepTime(memGroup[0], perTime))
	s.line("for memstore's group);")
	s.line("every round measures every handler and mode once, the two sides of every ratio close together. First memstore's group")
	s.line("of four, in the cyclic order bare, memstore first call, %s, memstore replay, started one slot later each round, so that", aaName)
	s.line("every 4 rounds each of the four takes each position once; then each store and its by-hand baseline in the first-call mode,")
	s.line("then in the replay mode, each pair reversed in odd rounds. req/s is the median over the rounds, p50 and p99 are over all rounds'")
	s.line("requests, and each ratio is the median over the rounds of the ratio within a round, followed by its range over the rounds;")
	s.line("*p99 ÷ bare p99* is a round's p99 over the same round's bare p99.")
	s.line("")
	s.line("**%s** is the A/A control: the bare handler measured a second time, in a slot of memstore's group and set against the", aaName)
	s.line("bare handler as memstore is (each of them sits between memstore's two modes in the cyclic order). Nothing differs between")
	s.line("its two sides, so its ratios would read 1 on a quiet machine: their distance from 1 and their range are the noise floor of")
	s.line("memstore's ratios in the same row group, and of the goals on them (the goals section shows it beside them).")
	s.line("")
	header := []string{"handler", "mode", "clients", "requests", "req/s", "p50", "p99", "allocs/req", "CPU/req", "server CPU/req", "× bare (req/s)", "p99 ÷ bare p99", "× by-hand baseline (req/s)"}
	var rows [][]string
	ratioText := func(r []float64) string {
		if len(r) == 0 {
			return ""
		}
		if len(r) == 1 {
			return fmt.Sprintf("%.2f", r[0])
		}
		return fmt.Sprintf("%.2f (%.2f–%.2f)", median(r), slices.Min(r), slices.Max(r))
	}
	for _, conc := range o.clients {
		b := results[cellKey("bare", "", conc)]
		rows = append(rows, []string{"bare", "–", fmt.Sprint(conc), fmt.Sprint(len(b.lat)), fmt.Sprintf("%.0f", b.rps),
			fmtDur(pct(b.lat, 50)), fmtDur(pct(b.lat, 99)), fmt.Sprintf("%.1f", median(b.alloc)), cpuText(b.cpu), "", "1", "1", ""})
		a := results[cellKey(aaName, "", conc)]
		rows = append(rows, []string{aaName, "–", fmt.Sprint(conc), fmt.Sprint(len(a.lat)), fmt.Sprintf("%.0f", a.rps),
			fmtDur(pct(a.lat, 50)), fmtDur(pct(a.lat, 99)), fmt.Sprintf("%.1f", median(a.alloc)), cpuText(a.cpu), "", ratioText(a.ratio), ratioText(a.p99), ""})
		for _, t := range targets {
			for _, mode := range modes {
				c := results[cellKey(t.name, mode, conc)]
				rows = append(rows, []string{t.name, mode, fmt.Sprint(conc), fmt.Sprint(len(c.lat)), fmt.Sprintf("%.0f", c.rps),
					fmtDur(pct(c.lat, 50)), fmtDur(pct(c.lat, 99)), fmt.Sprintf("%.1f", median(c.alloc)), cpuText(c.cpu), cpuText(c.srv),
					ratioText(c.ratio), ratioText(c.p99), ratioText(c.vsBL)})
			}
		}
	}
	s.table(header, rows)

	// Figure: throughput relative to bare, per handler, at each client count.
	var groups []string
	for _, t := range targets {
		groups = append(groups, t.name)
	}
	var names []string
	var values [][]float64
	for _, conc := range o.clients {
		for _, mode := range modes {
			names = append(names, fmt.Sprintf("%s, %d clients", mode, conc))
			var v []float64
			for _, t := range targets {
				v = append(v, median(results[cellKey(t.name, mode, conc)].ratio))
			}
			values = append(values, v)
		}
	}
	if err := s.figure("http-throughput.svg", "throughput relative to the bare handler", barChart{
		title: "Throughput over loopback HTTP, relative to the bare handler (dashed: 1)", yLabel: "× bare handler req/s",
		groups: groups, names: names, values: values, ref: 1,
	}.render()); err != nil {
		return err
	}

	// The goals: the ratios at every client count, the memory store's
	// tail at the most clients, then the allocations. A store against its
	// by-hand baseline is held to more at many clients than at one, where
	// both wait on the same round trips.
	ratioGoals := []struct {
		name, mode, figure string
		vsBaseline         bool
		one, many          float64 // the bound at 1 client and at more
	}{
		{"memstore", "first call", "memstore first call ÷ bare handler", false, 0.95, 0.95},
		{"memstore", "replay", "memstore replay ÷ bare handler", false, 0.95, 0.95},
		{"redisstore", "first call", "redisstore first call ÷ Redis by hand", true, 1.1, 1.5},
		{"redisstore", "replay", "redisstore replay ÷ Redis by hand", true, 1.1, 1.5},
		{"pgstore", "first call", "pgstore first call ÷ PostgreSQL by hand", true, 1.1, 1.5},
		{"pgstore", "replay", "pgstore replay ÷ PostgreSQL by hand", true, 1.1, 1.5},
	}
	for _, g := range ratioGoals {
		for _, conc := range o.clients {
			c := results[cellKey(g.name, g.mode, conc)]
			r, bound := c.ratio, g.many
			if g.vsBaseline {
				r = c.vsBL
			}
			if conc == 1 {
				bound = g.one
			}
			goal := ratioGoal(fmt.Sprintf("%s, req/s, %d client(s)", g.figure, conc), median(r), r, bound)
			if !g.vsBaseline {
				goal.control = results[cellKey(aaName, "", conc)].ratio
			}
			s.goal(goal)
		}
	}
	most := slices.Max(o.clients)
	for _, mode := range modes {
		r := results[cellKey("memstore", mode, most)].p99
		goal := ceilingGoal(fmt.Sprintf("memstore %s p99 ÷ bare handler p99, %d client(s)", mode, most), median(r), r, 1.2)
		goal.control = results[cellKey(aaName, "", most)].p99
		s.goal(goal)
	}
	allocGoals := []struct {
		name, baseline string
		first, replay  float64 // allowed extra allocations over the baseline
	}{
		{"memstore", "bare", 8, 4},
		{"redisstore", "Redis by hand", 10, 10},
		{"pgstore", "PostgreSQL by hand", 15, 15},
	}
	for _, g := range allocGoals {
		for _, conc := range o.clients {
			for _, mode := range modes {
				base := results[cellKey(g.baseline, mode, conc)]
				if g.baseline == "bare" {
					base = results[cellKey("bare", "", conc)]
				}
				extra := g.first
				if mode == "replay" {
					extra = g.replay
				}
				s.goal(allocGoal(fmt.Sprintf("allocations per request, whole server, %s %s, %d client(s)", g.name, mode, conc),
					results[cellKey(g.name, mode, conc)].alloc, base.alloc, g.baseline, extra))
			}
		}
	}

	for _, conc := range o.clients {
		bare, aa := results[cellKey("bare", "", conc)], results[cellKey(aaName, "", conc)]
		s.headline(fmt.Sprintf("A/A control at %d client(s)", conc), "the bare handler against itself: × bare req/s %s, p99 ÷ bare p99 %s (median, range over the rounds)",
			ratioText(aa.ratio), ratioText(aa.p99))
		for _, name := range []string{"memstore", "redisstore", "pgstore"} {
			f, r := results[cellKey(name, "first call", conc)], results[cellKey(name, "replay", conc)]
			v := fmt.Sprintf("first call %.2f×, replay %.2f× bare req/s", median(f.ratio), median(r.ratio))
			if len(f.vsBL) > 0 {
				v += fmt.Sprintf("; %.2f× and %.2f× the by-hand baseline", median(f.vsBL), median(r.vsBL))
			}
			v += fmt.Sprintf("; p99 %s / %s (bare %s)", fmtDur(pct(f.lat, 99)), fmtDur(pct(r.lat, 99)), fmtDur(pct(bare.lat, 99)))
			s.headline(fmt.Sprintf("%s at %d client(s)", name, conc), "%s", v)
		}
	}
	return nil
}
