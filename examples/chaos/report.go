package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/geoidem/geoidem/examples/internal/faultproxy"
)

// report is what the table shows.
type report struct {
	store                         string
	senders, events               int
	invalid, twice                int
	deliveries                    int
	attempts, replays, conflicts  int64
	invalidAnswers                int64
	deadLettered, deadInvalid     int
	dead409, dead503              int // the others, by their last answer
	deadNoAnswer, deadOther       int
	redriven, redriveFailed       int
	resent, resentReplayed        int
	proxy                         faultproxy.Stats
	cuts, refused, severed        uint64
	stalls                        int
	stallFor                      time.Duration
	terminations, terminated      int
	kills                         int
	restarts                      int
	failovers                     int
	slotsMoved, keysMoved         int // -reshard
	reclaims                      int
	senderKills                   int
	journalPending                int // -1: no journal
	storeErrors, released         int // -1: unknown
	writtenTwice, lost, stored    int
	acked, ackedMissing           int // acknowledged in the first pass; of those, without effect before any re-send
	runs                          runCount
	replicas                      *replicaStats // nil: one receiver
	twiceIDs, lostIDs             []string
	firstPass, redrive, totalTime time.Duration

	// featuresRead: the one receiver's acknowledged features were read
	// with GET before the re-send; redeployed: after its restart.
	featuresRead, redeployed bool
}

func (r *report) ok() bool {
	return r.runs.twice == 0 && r.writtenTwice == 0 && r.lost == 0 && r.ackedMissing == 0 && r.journalPending <= 0
}

func (r *report) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	unknown := func(n int) string {
		if n < 0 {
			return "n/a"
		}
		return strconv.Itoa(n)
	}
	row("store", "%s", r.store)
	row("events", "%d (%d invalid, %d sent twice at once; %d deliveries)", r.events, r.invalid, r.twice, r.deliveries)
	row("senders", "%d", r.senders)
	row("attempts", "%d", r.attempts)
	row("replays", "%d", r.replays)
	row("409s", "%d", r.conflicts)
	row("422s", "%d", r.invalidAnswers)
	row("dead-lettered (first pass)", "%d (%d invalid, permanent)", r.deadLettered, r.deadInvalid)
	row("dead letters by last answer", "%d 409 (key in flight), %d 503, %d no answer, %d other", r.dead409, r.dead503, r.deadNoAnswer, r.deadOther)
	row("re-driven", "%d (%d failed again)", r.redriven, r.redriveFailed)
	row("re-sent (every event)", "%d (%d replayed)", r.resent, r.resentReplayed)
	p := r.proxy
	row("proxy requests", "%d (%d forwarded)", p.Requests, p.Forwarded)
	row("proxy faults", "%d lost-ack, %d 503, %d 429, %d reset, %d delay", p.LostAck, p.Inject503, p.Inject429, p.Reset, p.Delay)
	row("store cuts", "%d (%d connections reset, %d refused)", r.cuts, r.severed, r.refused)
	row("store stalls", "%d (%v each)", r.stalls, r.stallFor)
	row("pg_terminate_backend", "%d (%d connections)", r.terminations, r.terminated)
	row("receiver kills", "%d", r.kills)
	if rs := r.replicas; rs != nil {
		row("replicas", "%d (%s; requests answered %v; %d sent on past a replica down, %d answered 502)", rs.n, rs.policy, rs.spread, rs.skipped, rs.failed)
		row("replica restarts (SIGTERM)", "%d (%d in a handler run, drained; rolling, %v)", rs.restarts, rs.termInRun, rs.restartTime.Round(time.Millisecond))
		if rs.killAfterEffect {
			row("replica kills (SIGKILL)", "%d (%d after a run's effect, before its key's completion)", rs.kills, rs.afterEffect)
		} else {
			row("replica kills (SIGKILL)", "%d (%d in a handler run)", rs.kills, rs.inRun)
		}
		row("replicas restarted before the check", "%d (every replica, SIGTERM and started again; then GET /features/{id} of every acknowledged event)", rs.restartedAll)
	}
	if r.replicas == nil && r.featuresRead {
		if r.redeployed {
			row("receiver restarted before the check", "1 (stopped gracefully, as on SIGTERM, and started again on the same store; then GET /features/{id} of every acknowledged event)")
		} else {
			row("receiver restarted before the check", "0 (the memory store keeps nothing across a restart; GET /features/{id} of every acknowledged event)")
		}
	}
	row("Redis restarts", "%d", r.restarts)
	row("Redis failovers", "%d", r.failovers)
	row("Cluster slots migrated", "%d (%d keys moved; %d claimed again after going back to the old owner)", r.slotsMoved, r.keysMoved, r.reclaims)
	row("sender kills", "%d", r.senderKills)
	row("journal pending", "%s", unknown(r.journalPending))
	row("store 503s (fail closed)", "%s", unknown(r.storeErrors))
	row("handler 5xx (released)", "%s", unknown(r.released))
	rc := r.runs
	row("runs reaching the write", "%d (%d events more than once)", rc.attempts, rc.attemptedTwice)
	row("runs that took effect", "%d (%d rolled back or refused; %s)", rc.effects, rc.undone, rc.source)
	row("features stored", "%d", r.stored)
	row("events run twice", "%d%s", rc.twice, sample(rc.twiceIDs))
	row("features written twice", "%d%s", r.writtenTwice, sample(r.twiceIDs))
	row("acknowledged, effect missing", "%d of %d acknowledged (checked before any re-send)", r.ackedMissing, r.acked)
	row("events lost", "%d%s", r.lost, sample(r.lostIDs))
	row("time", "%s (first pass %s, re-drive and re-send %s)", r.totalTime.Round(time.Millisecond), r.firstPass.Round(time.Millisecond), r.redrive.Round(time.Millisecond))
	verdict := "PASS: every valid event stored, none run or written twice"
	if !r.ok() {
		verdict = "FAIL"
	}
	row("result", "%s", verdict)
	_ = tw.Flush()
}

// sample lists a few ids, for a failing row.
func sample(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids)
	if len(ids) > 5 {
		return fmt.Sprintf(" (%v …)", ids[:5])
	}
	return fmt.Sprintf(" (%v)", ids)
}
