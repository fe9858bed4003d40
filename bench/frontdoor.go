package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Section 9: the front door. Attacks that stay below the
// request layer, each against a receiving service in a process of its own
// (this binary again), wired two ways:
//
//   - "no front door": the idempotency middleware over memstore in an
//     http.Server with timeouts alone (ReadTimeout 30 s, IdleTimeout
//     2 min);
//   - "front door (frontdoor.New)": the shipped configuration, as
//     examples/ingest and geoidem proxy wire it (defaults, 127.2.0.0/16 a
//     known network): work admitted once the body has arrived.
//
// Every verdict is the shipped configuration's; the row without a front
// door is kept, labelled, to show what it changes.
//
// Idle connections: attacker processes (two, each within the file
// descriptor limit) open fdIdleConns connections from 127.0.0.2–254, each
// idle after one GET /healthz, and hold what the server keeps (a
// persistent attacker also connects again 2 s after the server closes
// one); then a prober on 127.0.0.1 asks /healthz on a new connection every
// 250 ms. Slow bodies: 64 connections from 127.0.0.2–5,
// each declaring 100 bytes and sending one every 2 s, connecting again at
// once when one ends; a sender on 127.0.0.6 posts a small body every
// 100 ms. Then the same from 127.0.0.2–9, 8 connections each (the front
// door's per-host bound), the sender on 127.0.0.10.

// The section's targets.
const (
	fdVictimGoal = 0.95            // share of 2xx for the sender under slow bodies
	fdProbeGoal  = 0.95            // share of /healthz answered within fdProbeLimit
	fdProbeLimit = time.Second     // under idle connections
	fdRSSGoal    = 256 << 20       // the server's peak resident memory under them
	fdRedial     = 2 * time.Second // an idle attacker's pause before it connects again
	fdSlowEvery  = 2 * time.Second // a slow body's pace: one byte per
	fdProbeEvery = 250 * time.Millisecond
)

var fdModes = map[string]string{"bare": "no front door", "one": "front door (frontdoor.New)"}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

func runFrontdoor(ctx context.Context, s *section) error {
	o := s.o
	limit := raiseFileLimit()
	conns, slowFor := o.fdIdleConns, o.fdSlowFor
	s.line("Each service runs in a process of its own (this binary again, file descriptor limit raised to the hard limit: %d here),", limit)
	s.line("wired two ways: **no front door** (the idempotency middleware over memstore in an `http.Server` with timeouts alone:")
	s.line("ReadTimeout 30 s, IdleTimeout 2 min); and **front door (frontdoor.New)**, the shipped configuration, as examples/ingest and")
	s.line("`geoidem proxy` wire it (defaults, 127.2.0.0/16 a known network): work admitted once the body has arrived. Every verdict is")
	s.line("the shipped configuration's.")
	s.line("")
	s.line("### Slow bodies")
	s.line("")
	s.line("64 connections from 127.0.0.2–5 (16 each), each declaring a 100-byte body and sending one byte every %v, connecting", fdSlowEvery)
	s.line("again at once when the server answers or closes; a sender on 127.0.0.6 posts a small valid Feature every 100 ms for")
	s.line("%v. Target: the sender gets ≥ %.0f%% 2xx.", slowFor, fdVictimGoal*100)
	s.line("")
	var rows [][]string
	var doorSlow slowResult
	for _, mode := range []string{"bare", "one"} {
		r, err := runSlow(ctx, s, mode, slowFor, 4, 16)
		if err != nil {
			return err
		}
		ra := "—"
		if len(r.retryAfters) > 0 {
			ra = fmt.Sprintf("%d s first, %d–%d s", r.retryAfters[0], slices.Min(r.retryAfters), slices.Max(r.retryAfters))
		}
		share := float64(r.ok) / float64(max(1, r.tries))
		rows = append(rows, []string{fdModes[mode], fmt.Sprintf("%d/%d (%.1f%%)", r.ok, r.tries, share*100), fmt.Sprint(r.other), ra,
			fmt.Sprintf("%d 408, %d closed unanswered, %v", r.attackers[408], r.attackers[0], r.attackers)})
		if mode == "one" {
			doorSlow = r
		}
	}
	s.table([]string{"service", "sender's 2xx", "sender's other answers", "Retry-After of the refusals", "attackers' answers"}, rows)
	doorShare := float64(doorSlow.ok) / float64(max(1, doorSlow.tries))
	s.line("frontdoor.New against the target: %.1f%% 2xx, %s.", doorShare*100, verdict(doorShare >= fdVictimGoal))
	s.line("")
	s.headline("slow bodies, 64 connections from 4 addresses: a sender's 2xx behind the front door", "%.1f%% (target ≥ %.0f%%)", doorShare*100, fdVictimGoal*100)

	s.line("### Slow bodies from eight addresses")
	s.line("")
	s.line("The same attack from 127.0.0.2–9, 8 connections each (the front door's per-host bound): 64 slow bodies. The sender posts")
	s.line("from 127.0.0.10 for %v.", slowFor)
	s.line("")
	rows = nil
	var cutSlow slowResult
	for _, mode := range []string{"one"} {
		r, err := runSlow(ctx, s, mode, slowFor, 8, 8)
		if err != nil {
			return err
		}
		share := float64(r.ok) / float64(max(1, r.tries))
		rows = append(rows, []string{fdModes[mode], fmt.Sprintf("%d/%d (%.1f%%)", r.ok, r.tries, share*100), fmt.Sprint(r.other),
			fmt.Sprintf("%d 408, %d closed unanswered, %v", r.attackers[408], r.attackers[0], r.attackers)})
		if mode == "one" {
			cutSlow = r
		}
	}
	s.table([]string{"service", "sender's 2xx", "sender's other answers", "attackers' answers"}, rows)
	cutShare := float64(cutSlow.ok) / float64(max(1, cutSlow.tries))
	s.line("frontdoor.New against the target: %.1f%% 2xx, %s.", cutShare*100, verdict(cutShare >= fdVictimGoal))
	s.line("")
	s.headline("slow bodies, 64 connections from 8 addresses: a sender's 2xx behind the front door", "%.1f%% (target ≥ %.0f%%)", cutShare*100, fdVictimGoal*100)

	if err := runManySection(ctx, s, slowFor); err != nil {
		return err
	}

	s.line("### Idle connections")
	s.line("")
	s.line("Two attacker processes open %d connections from 127.0.0.2–254, each idle after one `GET /healthz`: as in the attack, they", conns)
	s.line("hold what the server keeps; a **persistent** attacker also connects again %v after the server closes one. Once each", fdRedial)
	s.line("connection has been tried, a prober on 127.0.0.1 asks `/healthz` on a new connection every %v (5 s timeout).", fdProbeEvery)
	s.line("Targets: ≥ %.0f%% of the tries answered within %v, and the server's resident memory (peak, VmHWM) under %d MB.", fdProbeGoal*100, fdProbeLimit, fdRSSGoal>>20)
	s.line("")
	rows = nil
	var door, persistent idleResult
	for _, run := range []struct {
		mode   string
		redial bool
	}{{"bare", false}, {"one", false}, {"one", true}} {
		mode := run.mode
		r, err := runIdle(ctx, s, mode, conns, run.redial)
		if err != nil {
			return err
		}
		name := fdModes[mode]
		if run.redial {
			name += ", persistent attacker"
		}
		slices.Sort(r.probeTimes)
		p50, worst := r.probeTimes[len(r.probeTimes)/2], r.probeTimes[len(r.probeTimes)-1]
		rows = append(rows, []string{name, fmt.Sprintf("%d held, %d opened", r.held, r.dials), fmt.Sprint(r.serverFiles), fmt.Sprint(r.emfile),
			fmt.Sprintf("%d/%d", r.inTime, r.probes), fmt.Sprintf("%v / %v", p50.Round(time.Millisecond), worst.Round(time.Millisecond)), fmt.Sprint(r.probeErrs),
			fmt.Sprintf("%.0f MB", float64(r.peakRSS)/(1<<20))})
		switch {
		case mode == "one" && run.redial:
			persistent = r
		case mode == "one":
			door = r
		}
	}
	s.table([]string{"service", "attacker connections", "server's open files", "accept errors: too many open files", "/healthz within 1 s", "/healthz median / worst", "/healthz failures", "server's peak RSS"}, rows)
	inTime := float64(door.inTime) / float64(max(1, door.probes))
	s.line("frontdoor.New against the targets: /healthz within %v on %.0f%% of the tries, %s; peak resident memory %.0f MB, %s.",
		fdProbeLimit, inTime*100, verdict(inTime >= fdProbeGoal), float64(door.peakRSS)/(1<<20), verdict(door.peakRSS > 0 && door.peakRSS < fdRSSGoal))
	pIn := float64(persistent.inTime) / float64(max(1, persistent.probes))
	s.line("Against a persistent attacker: within %v on %.0f%% of the tries, %s; peak resident memory %.0f MB, %s.",
		fdProbeLimit, pIn*100, verdict(pIn >= fdProbeGoal), float64(persistent.peakRSS)/(1<<20), verdict(persistent.peakRSS > 0 && persistent.peakRSS < fdRSSGoal))
	s.headline(fmt.Sprintf("%d idle connections: /healthz within 1 s, server's peak RSS, behind the front door", conns),
		"%d/%d (target ≥ %.0f%%), %.0f MB (target < %d MB); persistent attacker: %d/%d, %.0f MB", door.inTime, door.probes, fdProbeGoal*100, float64(door.peakRSS)/(1<<20), fdRSSGoal>>20,
		persistent.inTime, persistent.probes, float64(persistent.peakRSS)/(1<<20))
	return nil
}

// runManySection runs the many-address attacks, each alone against
// frontdoor.New, then all at once.
func runManySection(ctx context.Context, s *section, d time.Duration) error {
	s.line("### Many addresses")
	s.line("")
	s.line("Each attack from 127.1.y.z, alone, against **frontdoor.New** (defaults, 127.2.0.0/16 a known network: work admitted once")
	s.line("the body has arrived); then")
	s.line("all at once against frontdoor.New. A sender on 127.0.0.250 posts a small body every 100 ms for %v; a known provider", d)
	s.line("on 127.2.0.1 posts 1 MB bodies from 4 connections. Header-only slow bodies send a byte every %v and connect again", fdSlowEvery)
	s.line("when cut; slow readers post a small body whose 61 KB answer they never read (1 KiB receive buffer); bodies that never")
	s.line("arrive declare 100 bytes and send none. Attacker bandwidth: the bytes the attackers wrote (and 60 a connection for")
	s.line("TCP) over the run. Targets: the sender ≥ 95%% 2xx, the provider ≥ 99%% and never cut, peak RSS ≤ 256 MB.")
	s.line("")
	var rows [][]string
	row := func(name, mode string, r manyResult) {
		share := float64(r.ok) / float64(max(1, r.tries))
		pshare := float64(r.provOK) / float64(max(1, r.provTries))
		rows = append(rows, []string{name, fdModes[mode], fmt.Sprintf("%d/%d (%.1f%%) %v", r.ok, r.tries, share*100, r.other),
			fmt.Sprintf("%d/%d (%.1f%%), %d cut %v", r.provOK, r.provTries, pshare*100, r.provCut, r.provOther),
			fmt.Sprintf("%.1f KB/s", float64(r.attackerBytes)/r.took.Seconds()/1000), fmt.Sprintf("%.0f MB", float64(r.peakRSS)/(1<<20))})
	}
	for _, a := range manyAttacks {
		for _, mode := range []string{"one"} {
			s.o.logf("frontdoor: %s against %s", a.name, mode)
			r, err := runMany(ctx, mode, []manyAttack{a}, d, false)
			if err != nil {
				return err
			}
			row(a.name, mode, r)
		}
	}
	s.o.logf("frontdoor: every attack at once against one")
	all, err := runMany(ctx, "one", manyAttacks, d, false)
	if err != nil {
		return err
	}
	row("all of them at once", "one", all)
	s.table([]string{"attack", "service", "sender's 2xx", "provider's 2xx", "attacker bandwidth", "server's peak RSS"}, rows)
	share := float64(all.ok) / float64(max(1, all.tries))
	pshare := float64(all.provOK) / float64(max(1, all.provTries))
	s.line("frontdoor.New under every attack at once: the sender %.1f%% 2xx, %s; the provider %.1f%%, %d cut, %s; peak RSS %.0f MB, %s.",
		share*100, verdict(share >= fdVictimGoal), pshare*100, all.provCut, verdict(pshare >= 0.99 && all.provCut == 0),
		float64(all.peakRSS)/(1<<20), verdict(all.peakRSS > 0 && all.peakRSS <= fdRSSGoal))
	s.line("")
	s.headline("every many-address attack at once: a sender's 2xx, a known provider's, behind frontdoor.New", "%.1f%% (target ≥ %.0f%%), %.1f%% (target ≥ 99%%, never cut: %d cut)",
		share*100, fdVictimGoal*100, pshare*100, all.provCut)
	return nil
}
