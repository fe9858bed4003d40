package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// Section 2: a duplicate storm. N requests with one key and one payload are
// released at the same moment, each on its own warm keep-alive connection;
// the handler must run exactly once.

// stormKinds are the kinds of answer, in table order.
var stormKinds = []string{"executed", "replayed", "409 in flight", "other"}

type stormResult struct {
	executions int64
	byKind     map[string][]time.Duration // sorted latencies
	others     map[int]int                // status counts of "other" answers (0: transport error)
	wall       time.Duration
}

// storm runs one storm against a handler wrapped around store.
func storm(ctx context.Context, o *options, store keystore.Store, cfg middleware.Config) (stormResult, error) {
	n := o.stormRequests
	var executions atomic.Int64
	var warm sync.WaitGroup
	warm.Add(n)
	warmed := make(chan struct{})
	go func() { warm.Wait(); close(warmed) }()
	work := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // connection warm-up: hold until every connection is open
			warm.Done()
			select {
			case <-warmed:
			case <-time.After(10 * time.Second):
			}
			return
		}
		executions.Add(1)
		body, _ := io.ReadAll(r.Body)
		time.Sleep(o.stormWork) // the ingest work the duplicates collide with
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(ingestBody(body))
	}
	h, err := wrap(store, cfg, http.HandlerFunc(work))
	if err != nil {
		return stormResult{}, err
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := newClient(n)
	defer c.CloseIdleConnections()
	url := srv.URL + "/features"

	// Open n connections: n concurrent GETs (passed through by the
	// middleware), each held by the handler until all have arrived.
	var wg sync.WaitGroup
	var warmErr atomic.Pointer[error]
	for range n {
		wg.Go(func() {
			resp, err := c.Get(url)
			if err != nil {
				warmErr.CompareAndSwap(nil, &err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	if p := warmErr.Load(); p != nil {
		return stormResult{}, fmt.Errorf("warm-up: %w", *p)
	}

	key := "storm-" + randomHex(8)
	type answer struct {
		kind   string
		status int
		lat    time.Duration
	}
	answers := make([]answer, n)
	release := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-release
			t0 := time.Now()
			a := answer{kind: "other"}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(feature))
			req.Header.Set("Idempotency-Key", key)
			resp, err := c.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				a.status = resp.StatusCode
				switch {
				case resp.StatusCode == http.StatusCreated && resp.Header.Get("Idempotent-Replayed") == "true":
					a.kind = "replayed"
				case resp.StatusCode == http.StatusCreated:
					a.kind = "executed"
				case resp.StatusCode == http.StatusConflict:
					a.kind = "409 in flight"
				}
			}
			a.lat = time.Since(t0)
			answers[i] = a
		})
	}
	start := time.Now()
	close(release)
	wg.Wait()
	res := stormResult{executions: executions.Load(), byKind: map[string][]time.Duration{}, others: map[int]int{}, wall: time.Since(start)}
	for _, a := range answers {
		res.byKind[a.kind] = append(res.byKind[a.kind], a.lat)
		if a.kind == "other" {
			res.others[a.status]++
		}
	}
	for _, l := range res.byKind {
		slices.Sort(l)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.executions != 1 || len(res.byKind["executed"]) != 1 {
		return res, fmt.Errorf("%d requests with one key: the handler ran %d times, %d answers were first executions; want 1 and 1",
			n, res.executions, len(res.byKind["executed"]))
	}
	return res, nil
}

func runStorm(ctx context.Context, s *section) (err error) {
	o := s.o
	sv, rs, ps, err := openStores(ctx, o)
	if err != nil {
		return err
	}
	defer func() { ps.Close(); err = errors.Join(err, sv.close(ctx)) }()
	wait := 10 * time.Second
	runs := []struct {
		name  string
		store keystore.Store
		cfg   middleware.Config
	}{
		{"memstore", new(memstore.Store), middleware.Config{}},
		{"redisstore", rs, middleware.Config{}},
		{"pgstore", ps, middleware.Config{}},
		{fmt.Sprintf("memstore, WaitInFlight %v", wait), new(memstore.Store), middleware.Config{WaitInFlight: wait}},
	}

	s.line("%d goroutines each hold a warm keep-alive connection to the wrapped handler and, released together, POST the same Feature", o.stormRequests)
	s.line("with the same Idempotency-Key. The handler counts its executions and works for %v (a real sleep: the time in which the", o.stormWork)
	s.line("duplicates collide with the original). Latency is per request, from the release to the answer's last byte. The middleware runs")
	s.line("with its default Config (a duplicate of a running request is answered 409 with Retry-After at once), and in the last row with")
	s.line("`WaitInFlight`, which makes duplicates wait for the original and replay it. pgstore uses a pool of %d connections.", pgPoolSize)
	s.line("")
	header := []string{"store", "handler executions", "answer", "count", "p50", "p90", "p99", "max"}
	var rows [][]string
	var failures []error
	for _, r := range runs {
		o.logf("storm: %s", r.name)
		res, err := storm(ctx, o, r.store, r.cfg)
		if err != nil && res.byKind == nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", r.name, err))
		}
		check := "**1** ✓"
		if res.executions != 1 {
			check = fmt.Sprintf("**%d** ✗", res.executions)
		}
		first := true
		for _, kind := range stormKinds {
			l := res.byKind[kind]
			if len(l) == 0 {
				continue
			}
			name, execs := "", ""
			if first {
				name, execs, first = r.name, check, false
			}
			label := kind
			if kind == "other" {
				label = fmt.Sprintf("other %v", res.others)
			}
			rows = append(rows, []string{name, execs, label, fmt.Sprint(len(l)), fmtDur(pct(l, 50)), fmtDur(pct(l, 90)), fmtDur(pct(l, 99)), fmtDur(l[len(l)-1])})
		}
		s.headline(fmt.Sprintf("Duplicate storm, %d requests, %s", o.stormRequests, r.name), "handler ran %d time(s); %d executed, %d replayed, %d × 409, %d other",
			res.executions, len(res.byKind["executed"]), len(res.byKind["replayed"]), len(res.byKind["409 in flight"]), len(res.byKind["other"]))
	}
	s.table(header, rows)
	s.line("(\"other\" lists the statuses of the remaining answers, 0 for a transport error.)")
	return errors.Join(failures...)
}
