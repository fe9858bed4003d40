package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Section 10: retention at scale. Each store is filled to
// o.retentionKeys keys, written straight in the store's own format (a COPY
// into pgstore's table, pipelined SETs of redisstore's values), as a day of
// deliveries leaves them: completed records whose retention ends anywhere
// in the next 24 hours. Then, at that size and on an empty store side by
// side, in interleaved rounds: the latency of the store's own Claim (a new
// key, a replay of a filled key) and Complete, from Go, serially; the table
// and index size, or the server's memory, per key; and for PostgreSQL the
// cost of pruning, Prune's DELETEs and the VACUUM that reclaims what they
// leave, in CPU time of the backend that runs them, per 100,000 rows. The
// figures are projected to 432 M keys (5,000 first calls/s
// kept 24 h).

const (
	// retentionRate and retentionDay are the load of many receivers on one store: 5,000 first calls
	// per second, each kept for 24 hours.
	retentionRate = 5000
	retentionDay  = 24 * time.Hour
	// retentionRounds interleaves the latency measurements of the full and
	// the empty store, so that both meet the same moments of a shared
	// machine.
	retentionRounds = 5
	// retentionLiveFrom is the earliest end of a live filled key's
	// retention, after the fill: later than the section's end, so that
	// every replay measured finds its key completed (in a day of deliveries
	// the retentions end evenly over the next 24 h, from now on).
	retentionLiveFrom = time.Hour
)

// retentionKeysAtRate is the number of keys a store holds at that load:
// 432 M.
const retentionKeysAtRate = retentionRate * int64(retentionDay/time.Second)

// retentionRecord is every filled key's record: what section 1's bare
// handler answers, as the middleware records it.
var retentionRecord = record.Record{
	StatusCode: http.StatusCreated,
	Header:     http.Header{"Content-Type": {"application/json"}},
	Body:       ingestBody([]byte(feature)),
}

// retentionKey is the i-th filled key of a run: 64 hexadecimal digits, as
// the middleware's store keys are (middleware.StoreKey), spread over the
// key space.
func retentionKey(run string, i int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	sum := sha256.Sum256(append([]byte(run), b[:]...))
	return hex.EncodeToString(sum[:])
}

// latencies are the Claim and Complete latencies of one store at one size
// and, where cpu is set, the CPU time the server spent on each kind of call.
type latencies struct {
	claimNew, complete, replay []time.Duration

	// cpu, if set, reads the CPU time the server has used so far for this
	// store's calls (a PostgreSQL backend's, from /proc).
	cpu                              func() (time.Duration, bool)
	cpuClaim, cpuComplete, cpuReplay time.Duration
	cpuMissed                        bool // a reading failed
}

func (l *latencies) sort() {
	for _, v := range [][]time.Duration{l.claimNew, l.complete, l.replay} {
		slices.Sort(v)
	}
}

// tick adds the server's CPU time since the last reading *last to *to.
// The readings are taken between calls, outside the timed spans.
func (l *latencies) tick(last *time.Duration, to *time.Duration) {
	if l.cpu == nil {
		return
	}
	c, ok := l.cpu()
	if !ok {
		l.cpuMissed = true
		return
	}
	if to != nil {
		*to += c - *last
	}
	*last = c
}

// measureLatency times, serially, n Claims of new keys each followed by its
// Complete, and n Claims of keys the fill wrote (replays), on s; pick(i)
// returns the i-th filled key to replay, which must come back completed
// with retentionRecord.
func measureLatency(ctx context.Context, s keystore.Store, run string, n int, pick func(int) string, l *latencies) error {
	rec := record.Append(nil, retentionRecord)
	var last time.Duration
	l.tick(&last, nil)
	for range n {
		key := retentionKey(run+"new", len(l.claimNew))
		args := keystore.ClaimArgs{Fingerprint: sha256.Sum256([]byte(key)), Lease: 30 * time.Second, Token: keystore.NewToken()}
		t0 := time.Now()
		c, err := s.Claim(ctx, key, args)
		l.claimNew = append(l.claimNew, time.Since(t0))
		if err != nil || !c.Acquired {
			return fmt.Errorf("claim of a new key: acquired %v, %v", c.Acquired, err)
		}
		l.tick(&last, &l.cpuClaim)
		t0 = time.Now()
		err = s.Complete(ctx, key, args.Token, rec, retentionDay)
		l.complete = append(l.complete, time.Since(t0))
		if err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		l.tick(&last, &l.cpuComplete)

		key = pick(len(l.replay))
		t0 = time.Now()
		c, err = s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: sha256.Sum256([]byte(key)), Lease: 30 * time.Second, Token: keystore.NewToken()})
		l.replay = append(l.replay, time.Since(t0))
		if err != nil || c.State != keystore.Completed || !bytes.Equal(c.Record, rec) {
			return fmt.Errorf("replay of a filled key: state %v, record %q, %v (the fill does not write the store's format)", c.State, c.Record, err)
		}
		l.tick(&last, &l.cpuReplay)
	}
	return nil
}

// latencyRows are the table rows of l at each size: the call, how many,
// p50, p99 and, where measured, the server's CPU per call.
func latencyRows(name string, sizes []string, ls []*latencies) [][]string {
	var rows [][]string
	for i, l := range ls {
		l.sort()
		for _, c := range []struct {
			what string
			v    []time.Duration
			cpu  time.Duration
		}{{"Claim, new key", l.claimNew, l.cpuClaim}, {"Complete", l.complete, l.cpuComplete}, {"Claim, replay", l.replay, l.cpuReplay}} {
			row := []string{name + ", " + sizes[i], c.what, commas(int64(len(c.v))), fmtDur(pct(c.v, 50)), fmtDur(pct(c.v, 99))}
			if l.cpu != nil {
				cpu := "–"
				if !l.cpuMissed && len(c.v) > 0 {
					cpu = fmtDur(c.cpu / time.Duration(len(c.v)))
				}
				row = append(row, cpu)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func runRetention(ctx context.Context, s *section) error {
	o := s.o
	s.line("Each store filled to **%s keys** (10 M by default; `-retention-keys` sets it), written straight in the store's own format, "+
		"as a day of deliveries leaves them: completed records (201, a Content-Type, a %d-byte body) whose retention ends anywhere between 1 h and 24 h from now, "+
		"keys of 64 hexadecimal digits like the middleware's. The fill is not measured; the store at that size is. "+
		"Latencies are the store's own Claim and Complete, called from Go one at a time, at that size and on an empty store of the same kind, "+
		"in %d interleaved rounds so that both meet the same load of a shared machine. "+
		"The load: %s first calls/s kept 24 h, so **%s keys** held at any time.",
		commas(int64(o.retentionKeys)), len(retentionRecord.Body), retentionRounds, commas(retentionRate), commas(retentionKeysAtRate))
	s.line("")
	var errs []error
	if err := retentionPostgres(ctx, s); err != nil {
		errs = append(errs, fmt.Errorf("postgres: %w", err))
	}
	for _, program := range []string{"redis-server", "valkey-server"} {
		if err := retentionRedis(ctx, s, program); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", program, err))
		}
	}
	return errors.Join(errs...)
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
func gib(b float64) string {
	return fmt.Sprintf("%.0f GiB", b/(1<<30))
}
