package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary be section 9's children too: the section
// starts the binary it runs in as its services and attackers.
func TestMain(m *testing.M) {
	if code, ok := frontdoorChild(); ok {
		os.Exit(code)
	}
	if code, ok := reverseProxyChild(); ok {
		os.Exit(code) // section 12's ReverseProxy
	}
	os.Exit(m.Run())
}

// TestFrontdoorSection runs section 9 alone in the tiny mode (400 idle
// connections, 3 s of slow bodies) and checks its tables and targets.
func TestFrontdoorSection(t *testing.T) {
	md, _ := runSection(t, "frontdoor")
	for _, want := range []string{"## 9. Front door", "### Slow bodies", "### Idle connections", "| no front door |",
		"| front door (frontdoor.New) |", "| front door (frontdoor.New), persistent attacker |",
		"frontdoor.New against the target: ", "frontdoor.New against the targets: ", "slow bodies, 64 connections from 4 addresses",
		"### Slow bodies from eight addresses", "slow bodies, 64 connections from 8 addresses"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
	t.Log(md)
}

// TestManyAddresses runs each many-address attack of section 9 alone
// against each wiring, and all of them at once against frontdoor.New, for
// 5 s each, and logs the rows (select one with -run). It is a measuring
// tool, not a check (TestFrontdoorSection checks the targets): it runs only
// when asked, with GEOIDEM_BENCH_MANY_ALL=1 or GEOIDEM_BENCH_MANY (below).
func TestManyAddresses(t *testing.T) {
	if os.Getenv("GEOIDEM_BENCH_MANY_ALL") == "" && os.Getenv("GEOIDEM_BENCH_MANY") == "" {
		t.Skip("a measuring tool: set GEOIDEM_BENCH_MANY_ALL=1, or GEOIDEM_BENCH_MANY=kind,hosts,perHost for one attack")
	}
	raiseFileLimit()
	attacks := append(manyAttacks, manyAttack{name: "all"})
	// GEOIDEM_BENCH_MANY=kind,hosts,perHost runs that attack only, to find
	// where a sender goes under its target; GEOIDEM_BENCH_MANY_FOR sets how
	// long the sender posts (default 5 s); GEOIDEM_BENCH_MANY_FRESH, that the
	// sender opens a new connection for each post.
	if spec := os.Getenv("GEOIDEM_BENCH_MANY"); spec != "" {
		var a manyAttack
		f := strings.Split(spec, ",")
		if len(f) != 3 {
			t.Fatalf("GEOIDEM_BENCH_MANY=%q: want kind,hosts,perHost", spec)
		}
		a.kind = f[0]
		a.hosts, _ = strconv.Atoi(f[1])
		a.perHost, _ = strconv.Atoi(f[2])
		a.name = spec
		attacks = []manyAttack{a}
	}
	for _, a := range attacks {
		for _, mode := range []string{"one"} {
			attacks := []manyAttack{a}
			if a.name == "all" {
				attacks = manyAttacks
			}
			t.Run(a.kind+"-"+a.name+"-"+mode, func(t *testing.T) {
				d := 5 * time.Second
				if v, err := time.ParseDuration(os.Getenv("GEOIDEM_BENCH_MANY_FOR")); err == nil {
					d = v
				}
				r, err := runMany(context.Background(), mode, attacks, d, os.Getenv("GEOIDEM_BENCH_MANY_FRESH") != "")
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s, %s: sender %d/%d %v; provider %d/%d, %d cut %v; attackers %.1f KB/s; peak RSS %d MB",
					a.name, mode, r.ok, r.tries, r.other, r.provOK, r.provTries, r.provCut, r.provOther,
					float64(r.attackerBytes)/r.took.Seconds()/1000, r.peakRSS>>20)
			})
		}
	}
}
