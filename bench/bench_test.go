package main

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// tinyOptions are smaller still than -quick, so that the whole program runs
// in seconds. Redis and PostgreSQL must be reachable on loopback: a missing
// service fails the test.
func tinyOptions(t *testing.T) options {
	o := defaultOptions(true)
	o.out = t.TempDir()
	o.command = "go test ./bench"
	o.log = testWriter{t}
	o.httpRequests, o.httpManyRequests, o.httpTime, o.httpRounds = 60, 60, 150*time.Millisecond, 1
	o.clients = []int{1, 8}
	o.stormRequests = 200
	o.stormWork = 10 * time.Millisecond
	o.vertices = []int{100, 1000}
	o.valTime = 5 * time.Millisecond
	o.occClients = []int{10, 50}
	o.occTrials = 5
	o.outageEvents, o.outageCapacity, o.outageDown = 100, 20, 5*time.Second
	o.hostileBody, o.hostileHoles, o.hostileCircle = 64<<10, []int{1000}, 1000
	o.faultEvents, o.faultSenders, o.faultWriteDelay = 40, 4, 5*time.Millisecond
	o.faultStall, o.faultPGKills = time.Second, 3
	o.journalOps, o.journalTime, o.journalRounds = 50, 50*time.Millisecond, 2
	o.fdIdleConns, o.fdSlowFor = 400, 3*time.Second
	o.retentionKeys, o.retentionExpired, o.retentionCalls = 20_000, 2000, 100
	o.topoEvents, o.topoSenders, o.topoSeeds, o.topoSpan = 60, 4, 1, 2*time.Second
	o.proxyRequests, o.proxyRounds = [2]int{40, 320}, 1
	if addr := os.Getenv("GEOIDEM_REDIS_ADDR"); addr != "" {
		o.redisAddr = addr
	}
	if url := os.Getenv("GEOIDEM_POSTGRES_URL"); url != "" {
		o.postgresURL = url
	}
	return o
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// ownTest are the sections a test of their own runs (runSection) and
// checks: TestRun leaves them out rather than run them twice.
var ownTest = map[string]bool{"hostile": true, "faults": true, "frontdoor": true, "retention": true, "proxy": true}

// TestRun runs every other section in the tiny mode, together, and checks
// the report and its figures.
func TestRun(t *testing.T) {
	o := tinyOptions(t)
	o.only = map[string]bool{}
	for _, s := range sections {
		if !ownTest[s.name] {
			o.only[s.name] = true
		}
	}
	start := time.Now()
	rep, err := run(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run took %v", time.Since(start))
	md, err := os.ReadFile(rep.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.failed) > 0 {
		t.Errorf("sections failed: %v\n%s", rep.failed, md)
	}
	for _, s := range sections {
		if o.only[s.name] != strings.Contains(string(md), "## "+s.title) {
			t.Errorf("REPORT.md: section %q present %v, want %v", s.title, !o.only[s.name], o.only[s.name])
		}
	}
	for _, want := range []string{"## Summary", "runtime.NumCPU", "GOMAXPROCS", "go test ./bench", "handler ran 1 time(s)", "### Validate ÷ json.Valid", "geojson.Validate ÷ encoding/json.Valid (speed)",
		"## Goals", "memstore first call ÷ bare handler, req/s, 8 client(s)", "allocations per request, whole server, pgstore replay, 1 client(s)", "memstore replay p99 ÷ bare handler p99, 8 client(s)", "A/A control (median, range)", "redisstore replay ÷ Redis by hand, req/s, 8 client(s)",
		"geojson.Validate ÷ encoding/json.Valid, zigzag 100k (speed)", "sender journal, serial deliveries/s ÷ the disk's fsyncs/s", "journal deliveries ÷ fsyncs",
		"overlaps by hand ÷ fsyncs: the ceiling of an overlapping journal here", "journal deliveries ÷ overlaps by hand"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("REPORT.md lacks %q", want)
		}
	}
	// Section 1's rows: every one has the process's CPU per request, and
	// every store's and by-hand baseline's row its server's; every row but
	// the bare handler's its ratios to the bare handler, in req/s and p99,
	// the A/A control's (the bare handler again) among them.
	rows, controls := 0, 0
	for line := range strings.Lines(string(md)) {
		cells := strings.Split(line, "|")
		if len(cells) != 15 || !slices.Contains([]string{"bare", aaName, "memstore", "redisstore", "Redis by hand", "pgstore", "PostgreSQL by hand"}, strings.TrimSpace(cells[1])) {
			continue
		}
		rows++
		name, cpu, server := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[9]), strings.TrimSpace(cells[10])
		if !strings.HasSuffix(cpu, " µs") {
			t.Errorf("section 1, %s: CPU/req %q", name, cpu)
		}
		if hasServer := name != "bare" && name != aaName && name != "memstore"; hasServer != strings.HasSuffix(server, " µs") {
			t.Errorf("section 1, %s: server CPU/req %q", name, server)
		}
		if name == aaName {
			controls++
		}
		for _, c := range []int{11, 12} {
			cell := strings.TrimSpace(cells[c])
			if name == "bare" {
				if cell != "1" {
					t.Errorf("section 1, bare: ratio to itself %q", cell)
				}
				continue
			}
			// A measured ratio: two decimals (0.00 for PostgreSQL's first
			// calls on a loaded machine), then its range if there are
			// several rounds.
			f := strings.Fields(cell)
			if len(f) == 0 || !strings.Contains(f[0], ".") {
				t.Errorf("section 1, %s: ratio to bare %q, want a measured one", name, cell)
			} else if r, err := strconv.ParseFloat(f[0], 64); err != nil || r < 0 {
				t.Errorf("section 1, %s: ratio to bare %q", name, cell)
			}
		}
	}
	// Per client count: the bare handler twice, and three stores and two
	// by-hand baselines in two modes each.
	if want := 12 * len(o.clients); rows != want || controls != len(o.clients) {
		t.Errorf("section 1 has %d rows with CPU figures, %d of the A/A control; want %d and %d", rows, controls, want, len(o.clients))
	}
	for _, conc := range o.clients {
		for _, want := range []string{
			fmt.Sprintf("| memstore replay p99 ÷ bare handler p99, %d client(s) |", slices.Max(o.clients)),
			fmt.Sprintf("A/A control at %d client(s)", conc),
		} {
			if !strings.Contains(string(md), want) {
				t.Errorf("REPORT.md lacks %q", want)
			}
		}
	}
	for _, bad := range []string{"FAILED", "Not available", "NaN"} {
		if strings.Contains(string(md), bad) {
			t.Errorf("REPORT.md contains %q", bad)
		}
	}
	figures, _ := filepath.Glob(filepath.Join(o.out, "*.svg"))
	if len(figures) < 10 {
		t.Errorf("%d figures, want at least 10: %v", len(figures), figures)
	}
	for _, f := range figures {
		name := filepath.Base(f)
		if !strings.Contains(string(md), "]("+name+")") {
			t.Errorf("REPORT.md does not link %s", name)
		}
		checkSVG(t, f)
	}
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(string(b)))
	var root bool
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Errorf("%s: not well-formed XML: %v", filepath.Base(path), err)
			return
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		seen := map[string]bool{}
		for _, a := range se.Attr {
			if seen[a.Name.Local] {
				t.Errorf("%s: <%s> repeats attribute %s", filepath.Base(path), se.Name.Local, a.Name.Local)
			}
			seen[a.Name.Local] = true
		}
		if !root {
			root = true
			if se.Name.Local != "svg" {
				t.Errorf("%s: root element %s, want svg", filepath.Base(path), se.Name.Local)
			}
		}
	}
	if strings.Contains(string(b), "00000") {
		t.Errorf("%s: a label or coordinate with a floating-point artefact", filepath.Base(path))
	}
	if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") {
		t.Errorf("%s: contains NaN or Inf coordinates", filepath.Base(path))
	}
}

// TestStormExecutesOnce checks the storm's own assertion independently.
func TestStormExecutesOnce(t *testing.T) {
	o := tinyOptions(t)
	res, err := storm(context.Background(), &o, new(memstore.Store), middleware.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.executions != 1 {
		t.Errorf("handler ran %d times, want 1", res.executions)
	}
	var answered int
	for _, l := range res.byKind {
		answered += len(l)
	}
	if answered != o.stormRequests || len(res.byKind["other"]) != 0 {
		t.Errorf("%d answers (%d other: %v), want %d executed, replayed or 409", answered, len(res.byKind["other"]), res.others, o.stormRequests)
	}
}

func TestOCCDeterministic(t *testing.T) {
	ns := []int{10, 60}
	a, err := runOCCGrid(context.Background(), ns, 3, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := runOCCGrid(context.Background(), ns, 3, 42)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different results:\n%v\n%v", a, b)
	}
	c, _ := runOCCGrid(context.Background(), ns, 3, 43)
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 42 and 43 gave identical results")
	}
}

// TestOCCJitterBeatsNoBackoff asserts the article's qualitative result: for
// N ≥ 50, full and decorrelated jitter make fewer calls than no backoff.
func TestOCCJitterBeatsNoBackoff(t *testing.T) {
	ns := []int{50, 100}
	grid, err := runOCCGrid(context.Background(), ns, 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	row := func(st client.Strategy) []occCell {
		for i, s := range occStrategies {
			if s == st {
				return grid[i]
			}
		}
		t.Fatalf("no strategy %v", st)
		return nil
	}
	none := row(client.None)
	for _, st := range []client.Strategy{client.FullJitter, client.Decorrelated} {
		for j, n := range ns {
			if got := row(st)[j].calls; got >= none[j].calls {
				t.Errorf("N=%d: %v made %.0f calls, no backoff %.0f; want fewer", n, st, got, none[j].calls)
			}
		}
	}
	// Every client writes at least once and exactly one write per client
	// succeeds, so no strategy can make fewer than N calls.
	for i, st := range occStrategies {
		for j, n := range ns {
			if grid[i][j].calls < float64(n) {
				t.Errorf("N=%d: %v made %.0f calls, fewer than N", n, st, grid[i][j].calls)
			}
		}
	}
}

func TestOutageDeterministic(t *testing.T) {
	p := outageParams{events: 50, capacity: 10, down: 3 * time.Second, spread: time.Second, seed: 5}
	for i, v := range outageVariants() {
		a, b := simulateOutage(v, i, p), simulateOutage(v, i, p)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different results", v.name)
		}
		var delivered int
		for _, d := range a.delivered {
			delivered += d
		}
		if delivered != p.events {
			t.Errorf("%s: %d delivered, want %d", v.name, delivered, p.events)
		}
		if a.firstOK < p.down {
			t.Errorf("%s: first delivery at %v, during the outage", v.name, a.firstOK)
		}
	}
}

// TestRetryableHTTPSchedule pins the go-retryablehttp delays the outage
// simulation relies on: 1, 2, 4, 8, 16, then 30 s.
func TestRetryableHTTPSchedule(t *testing.T) {
	var got []time.Duration
	var prev time.Duration
	for n := 1; n <= 7; n++ {
		prev = retryableHTTPVariant.next(prev, n, nil, nil)
		got = append(got, prev)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
}

func TestSlope(t *testing.T) {
	x := []float64{100, 1e4, 1e5}
	for _, k := range []float64{1, 1.5, 2} {
		y := make([]float64, len(x))
		for i := range x {
			y[i] = 3 * math.Pow(x[i], k)
		}
		if got := slope(x, y); math.Abs(got-k) > 1e-9 {
			t.Errorf("slope of x^%v = %v", k, got)
		}
	}
}

func TestPercentile(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i + 1)
	}
	for p, want := range map[float64]time.Duration{50: 50, 99: 99, 100: 100, 1: 1} {
		if got := pct(lat, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
}

func TestParseOnly(t *testing.T) {
	got, err := parseOnly("occ, 5,HTTP")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"occ": true, "outage": true, "http": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := parseOnly("plots"); err == nil {
		t.Error("unknown section accepted")
	}
	got, err = parseOnly("goals,8")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"http": true, "validate": true, "journal": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("goals: got %v, want %v", got, want)
	}
}

func TestCharts(t *testing.T) {
	dir := t.TempDir()
	charts := map[string][]byte{
		"line.svg":  lineChart{title: "t <&>", logY: true, series: []series{{name: "a", x: []float64{1, 2}, y: []float64{0, 10}}}}.render(),
		"bar.svg":   barChart{title: "b", groups: []string{"g"}, names: []string{"s"}, values: [][]float64{{math.NaN()}}, ref: 1}.render(),
		"empty.svg": lineChart{title: "empty"}.render(),
		"ratio.svg": barChart{title: "r", groups: []string{"a", "b"}, names: []string{"s"}, values: [][]float64{{0.8, 0.87}}, ref: 1}.render(),
	}
	for name, b := range charts {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		checkSVG(t, p)
	}
}

// TestRetentionSection runs section 10 alone in the tiny mode: every store
// is filled, its size and latency reported, and PostgreSQL's Prune deletes
// exactly the expired rows (the section fails otherwise).
func TestRetentionSection(t *testing.T) {
	md, _ := runSection(t, "retention")
	for _, want := range []string{"## 10. Retention at scale", "### PostgreSQL: size, latency and pruning", "### Redis 7", "### Valkey 8",
		"pgstore, 20,000 keys | Claim, new key", "pgstore, empty | Claim, replay", "2,000 rows, all expired", "20,000 rows, 2,000 expired",
		"432,000,000 keys", "% of a core"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"FAILED", "Not available", "NaN"} {
		if strings.Contains(md, bad) {
			t.Errorf("REPORT.md contains %q", bad)
		}
	}
}
