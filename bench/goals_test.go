package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRatioGoal(t *testing.T) {
	for _, c := range []struct {
		value  float64
		rounds []float64
		met    string
	}{
		{0.92, []float64{0.91, 0.92, 0.95}, "yes"},
		{0.92, []float64{0.85, 0.92, 0.95}, "yes (2 of 3 rounds)"},
		{0.9, []float64{0.9}, "yes"},
		{0.899, []float64{0.899}, "**no**"},
		{0.71, []float64{0.68, 0.71, 1.0}, "**no**"},
	} {
		g := ratioGoal("f", c.value, c.rounds, 0.9)
		if got := g.metText(); got != c.met {
			t.Errorf("ratio %v over %v against ≥ 0.9: met %q, want %q", c.value, c.rounds, got, c.met)
		}
	}
	g := ratioGoal("f", 0.715, []float64{0.68, 0.715, 1}, 0.9)
	if got, want := g.measuredText(), "0.715 (0.680–1.000)"; got != want {
		t.Errorf("measured %q, want %q", got, want)
	}
	if got, want := g.goalText, "≥ 0.90"; got != want {
		t.Errorf("goal %q, want %q", got, want)
	}
}

func TestCeilingGoal(t *testing.T) {
	for _, c := range []struct {
		value  float64
		rounds []float64
		met    string
	}{
		{1.1, []float64{1.0, 1.1, 1.15}, "yes"},
		{1.2, []float64{1.2}, "yes"},
		{1.15, []float64{1.1, 1.15, 1.4}, "yes (2 of 3 rounds)"},
		{1.201, []float64{1.201}, "**no**"},
		{1.58, []float64{1.0, 1.58, 1.9}, "**no**"},
	} {
		g := ceilingGoal("f", c.value, c.rounds, 1.2)
		if got := g.metText(); got != c.met {
			t.Errorf("ratio %v over %v against ≤ 1.2: met %q, want %q", c.value, c.rounds, got, c.met)
		}
	}
	if got, want := ceilingGoal("f", 1.5, nil, 1.2).goalText, "≤ 1.20"; got != want {
		t.Errorf("goal %q, want %q", got, want)
	}
}

func TestAllocGoal(t *testing.T) {
	// Medians 38 and 30: 38 ≤ 30+8, met; round 2 (40 against 31) is not.
	g := allocGoal("f", []float64{37, 40, 38}, []float64{30, 31, 30}, "bare", 8)
	if !g.met() || g.bound != 38 || g.roundsMet != 2 {
		t.Errorf("met %v, bound %v, rounds met %d; want true, 38, 2", g.met(), g.bound, g.roundsMet)
	}
	if got, want := g.metText(), "yes (2 of 3 rounds)"; got != want {
		t.Errorf("met %q, want %q", got, want)
	}
	if got, want := g.goalText, "≤ 38.0 (bare 30.0 + 8)"; got != want {
		t.Errorf("goal %q, want %q", got, want)
	}
	// The figures that set the goal: memstore 49 against bare 30 + 8.
	if g := allocGoal("f", []float64{49}, []float64{30}, "bare", 8); g.met() || g.metText() != "**no**" {
		t.Errorf("49 against ≤ 38: met %v (%s)", g.met(), g.metText())
	}
}

func TestGoalBook(t *testing.T) {
	var b goalBook
	if b.markdown("cmd") != "" {
		t.Error("an empty book writes a section")
	}
	b.add("http", ratioGoal("memstore first call ÷ bare handler", 0.95, []float64{0.95}, 0.9))
	b.add("http", allocGoal("allocations", []float64{49}, []float64{30}, "bare", 8))
	md := b.markdown("go run ./bench -only http")
	for _, want := range []string{
		"## Goals", "`go run ./bench -only http`",
		"| memstore first call ÷ bare handler | 0.950 | ≥ 0.90 | yes |",
		"| allocations | 49.0 | ≤ 38.0 (bare 30.0 + 8) | **no** |",
		"**1 of 2 goals met in this run.**",
		"Not measured in this run: geojson.Validate ÷ encoding/json.Valid (section `validate`); sender journal ÷ the disk's fsync rate (section `journal`)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("goals section lacks %q:\n%s", want, md)
		}
	}
}

// TestStepTime checks that memstore's group, which its request bound stops
// on a quiet machine, has twice the time bound of the stores' steps, so that
// under load its rounds still reach many requests.
func TestStepTime(t *testing.T) {
	const per = 750 * time.Millisecond
	for _, st := range roundOrder(0) {
		want := per
		if slices.Contains(memGroup, st) {
			want = 2 * per
		}
		if got := stepTime(st, per); got != want {
			t.Errorf("%v: time bound %v, want %v", st, got, want)
		}
	}
}

// TestGoalBookControl checks the A/A column: a goal measured with an A/A
// control shows the control's median and range next to its own figure, one
// without shows "–", and a book without controls has no such column.
func TestGoalBookControl(t *testing.T) {
	var b goalBook
	g := ceilingGoal("memstore replay p99 ÷ bare handler p99", 1.05, []float64{0.9, 1.05, 1.3}, 1.2)
	g.control = []float64{1.1, 0.95, 1.01}
	b.add("http", g)
	b.add("http", allocGoal("allocations", []float64{49}, []float64{30}, "bare", 8))
	md := b.markdown("go run ./bench -only http")
	for _, want := range []string{
		"| figure | measured (median, range) | A/A control (median, range) | goal | met? |",
		"| memstore replay p99 ÷ bare handler p99 | 1.050 (0.900–1.300) | 1.010 (0.950–1.100) | ≤ 1.20 | yes (2 of 3 rounds) |",
		"| allocations | 49.0 | – | ≤ 38.0 (bare 30.0 + 8) | **no** |",
		"*A/A control*",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("goals section lacks %q:\n%s", want, md)
		}
	}
	var plain goalBook
	plain.add("http", ratioGoal("f", 1, []float64{1}, 0.9))
	if md := plain.markdown("c"); strings.Contains(md, "A/A") {
		t.Errorf("a book without controls mentions them:\n%s", md)
	}
}

// cannedServer answers every HTTP/1.1 request on its connections with
// answer, allocating nothing per request, so that the allocations of a
// client against it are the client's.
func cannedServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				out := []byte(answer)
				for {
					length := 0
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						line = bytes.TrimRight(line, "\r\n")
						if len(line) == 0 {
							break
						}
						if hasPrefixFold(line, contentLength) {
							length, _ = parseDigits(bytes.TrimSpace(line[len(contentLength):]))
						}
					}
					if _, err := br.Discard(length); err != nil {
						return
					}
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestRawClientAllocs pins the load generator of section 1 at no
// allocation per request: the allocations counted during a measurement are
// the server's.
func TestRawClientAllocs(t *testing.T) {
	addr := cannedServer(t, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nIdempotent-Replayed: true\r\nContent-Length: 5\r\n\r\nhello")
	c, err := dialRaw(context.Background(), addr, "/features", feature)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := func(dst []byte) []byte { return append(dst, "some-key"...) }
	if err := c.do(key, true); err != nil {
		t.Fatal(err)
	}
	if err := c.do(key, false); err == nil || !strings.Contains(err.Error(), "Idempotent-Replayed") {
		t.Errorf("a replay taken for a first call: %v", err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if err := c.do(key, true); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
}

// TestRawClientChecks checks that the load generator refuses what section
// 1 must not count: another status, and an answer it cannot frame.
func TestRawClientChecks(t *testing.T) {
	for answer, want := range map[string]string{
		"HTTP/1.1 409 Conflict\r\nContent-Length: 9\r\n\r\nin flight":         "status 409: in flight",
		"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n": "unsupported",
		"HTTP/1.1 201 Created\r\n\r\n":                                        "without Content-Length",
	} {
		c, err := dialRaw(context.Background(), cannedServer(t, answer), "/features", feature)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.do(func(dst []byte) []byte { return dst }, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("answer %q: error %v, want %q", answer, err, want)
		}
		c.Close()
	}
}

// TestRoundOrder checks that every round measures every handler and mode
// once, that the memory store's group (the bare handler, memstore in both
// modes, and the bare handler again, the A/A control) comes first, and that
// every 4 rounds each of its slots takes each of its positions once, and
// each store stays next to its by-hand baseline in the same mode.
func TestRoundOrder(t *testing.T) {
	group := map[httpStep]bool{{"bare", ""}: true, {aaName, ""}: true, {"memstore", "first call"}: true, {"memstore", "replay"}: true}
	positions := map[httpStep]map[int]bool{}
	for round := range 4 {
		steps := roundOrder(round)
		at := map[httpStep]int{}
		for i, st := range steps {
			if _, dup := at[st]; dup {
				t.Errorf("round %d measures %v twice", round, st)
			}
			at[st] = i
		}
		if len(steps) != 12 {
			t.Errorf("round %d: %d steps, want 12 (bare twice, and 5 handlers in 2 modes)", round, len(steps))
		}
		for st := range group {
			i, ok := at[st]
			if !ok || i >= len(group) {
				t.Errorf("round %d: %v at %d, not among the first %d", round, st, i, len(group))
				continue
			}
			if positions[st] == nil {
				positions[st] = map[int]bool{}
			}
			positions[st][i] = true
		}
		adjacent := func(a, b httpStep) {
			ia, oka := at[a]
			ib, okb := at[b]
			if !oka || !okb || (ia-ib != 1 && ib-ia != 1) {
				t.Errorf("round %d: %v (%d) and %v (%d) not next to each other", round, a, ia, b, ib)
			}
		}
		for _, mode := range []string{"first call", "replay"} {
			adjacent(httpStep{"redisstore", mode}, httpStep{"Redis by hand", mode})
			adjacent(httpStep{"pgstore", mode}, httpStep{"PostgreSQL by hand", mode})
		}
	}
	for st := range group {
		if len(positions[st]) != len(group) {
			t.Errorf("in 4 rounds %v takes positions %v, want each of 0 to %d once", st, positions[st], len(group)-1)
		}
	}
	// The A/A control is placed as memstore is: between the two memstore
	// modes, as the bare handler is, in the cyclic order.
	first := roundOrder(0)[:len(group)]
	for i, st := range first {
		if st.name == "bare" || st.name == aaName {
			prev, next := first[(i+len(first)-1)%len(first)], first[(i+1)%len(first)]
			if prev.name != "memstore" || next.name != "memstore" {
				t.Errorf("%v between %v and %v, want between the memstore modes", st, prev, next)
			}
		}
	}
}
