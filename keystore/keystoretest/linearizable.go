package keystoretest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/linearize"
	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// The workload's fixed parameters.
const (
	// linClients is the number of goroutines calling the store at once.
	linClients = 6
	// linCallTimeout bounds each call (its context's deadline).
	linCallTimeout = time.Second
)

// LinearizableConfig shapes the workload of [Linearizable]. Zero fields
// mean the defaults given.
type LinearizableConfig struct {
	// Keys is the number of keys the clients share. Default 3. More keys
	// mean fewer calls on each, which keeps the check within its search
	// budget when many calls have an unknown outcome.
	Keys int
	// Ops bounds the calls made in all. Default 3000.
	Ops int
	// Duration bounds the time spent calling. Default 2 s.
	Duration time.Duration
	// Lease is the typical lease: each Claim and Extend asks for half of
	// it, it, or twice it. Holders pause between calls within their lease,
	// except that in one session out of four they once pause for 1.2 to 2
	// times it, so that many leases run out. Default 40 ms.
	Lease time.Duration
	// Retention of every record, short so that keys are claimed again.
	// Default 100 ms.
	Retention time.Duration
	// Slack is how far the store's clock may differ from the test's in
	// judging a deadline (see package internal/linearize). Default 5 ms;
	// negative means none (a store on the test's own clock, such as
	// memstore under testing/synctest).
	Slack time.Duration
	// Resends checks the history as one in which every call may have been
	// sent more than once (see linearize.WithResends): for a client library
	// that resends a command after a network error, such as go-redis with
	// MaxRetries >= 0. It is weaker than the default check: the store is then
	// checked to be linearizable per attempt, not per call.
	Resends bool
	// LeaseRemainingFromCallStart accepts a Claim's LeaseRemaining measured
	// from any instant of the call, even before the holder's lease began
	// (see linearize.KeyModel): for pgstore, whose Claim reads the clock at
	// the start of its statement.
	LeaseRemainingFromCallStart bool
	// Faults, if set, runs in its own goroutine while the clients call the
	// store, until its context is done: it breaks the path to the store
	// (cuts, stalls, killed sessions) and must leave it working on return.
	Faults func(ctx context.Context)
	// Seed seeds the clients' choices. Default: random, and logged.
	Seed uint64
}

// LinearizableStats counts what a [Linearizable] run did, so that a test
// can require the run to have exercised what it is about. Its String
// gives the number of calls made as well.
type LinearizableStats struct {
	ops       int // calls made
	Unknown   int // calls that failed with an error other than ErrLeaseLost: their effect is unknown
	LeaseLost int // calls that failed with ErrLeaseLost
	Acquired  int // Claims that acquired a key
	TookOver  int // of which took over an expired lease
	InFlight  int // Claims that found a key in flight
	Completed int // Claims that found a key completed
}

func (s LinearizableStats) String() string {
	return fmt.Sprintf("%d calls: %d of unknown outcome, %d ErrLeaseLost; claims: %d acquired (%d took over), %d in flight, %d completed",
		s.ops, s.Unknown, s.LeaseLost, s.Acquired, s.TookOver, s.InFlight, s.Completed)
}

// Linearizable calls s from six goroutines at once on a few keys,
// records every Claim, Extend, Complete and Release (when it was called,
// when it returned, its arguments and its result), and checks each key's
// history against the sequential model of one key in the Store contract:
// the history must be linearizable, each call taking effect at one instant
// between its call and its return. Calls that fail with an error other than
// keystore.ErrLeaseLost may or may not have taken effect, at any time after
// their call. Leases and retentions are judged as package internal/linearize
// explains: a deadline may have passed once its duration may have elapsed
// between the two calls, and must have passed once it surely has, give or
// take cfg.Slack.
//
// The workload mixes every rule of the contract on shared keys: concurrent
// claims, holders that extend, complete, release or walk away, leases that
// run out and are taken over, stale tokens used after a takeover, repeated
// Complete (with the same and with another record), repeated Release,
// Extend after the token's own Complete, a Claim repeated with its token,
// and the release, by its token, of a Claim whose outcome is unknown. Each
// call has 1 s to return.
//
// It fails t, printing the offending key's whole history, when a key's
// history is not linearizable or when the check gives up. It returns what the run did, so a test can
// require its faults to have produced calls of unknown outcome.
func Linearizable(t testing.TB, s keystore.Store, cfg LinearizableConfig) LinearizableStats {
	t.Helper()
	cfg.defaults()
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	t.Logf("linearizability workload: %d clients, %d keys, seed %d", linClients, cfg.Keys, cfg.Seed)

	rec := &recorder{cfg: cfg, s: s, start: time.Now(), keys: make([]string, cfg.Keys)}
	for i := range rec.keys {
		rec.keys[i] = Key(t)
	}
	rec.history = make([][]linearize.KeyOp, cfg.Keys)

	ctx, cancel := context.WithTimeout(t.Context(), cfg.Duration)
	defer cancel()
	var faults sync.WaitGroup
	if cfg.Faults != nil {
		faults.Go(func() { cfg.Faults(ctx) })
	}
	var clients sync.WaitGroup
	for c := range linClients {
		clients.Go(func() {
			cl := &client{rec: rec, id: c + 1, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(c))), old: make([][]keystore.Token, cfg.Keys)}
			cl.run(ctx)
		})
	}
	clients.Wait()
	cancel()
	faults.Wait()

	model := linearize.KeyModel{
		Slack:                       cfg.Slack,
		LeaseRemainingFromCallStart: cfg.LeaseRemainingFromCallStart,
	}.Model()
	for k, h := range rec.history {
		if cfg.Resends {
			h = linearize.WithResends(h)
		}
		res := linearize.Check(model, h, 0)
		switch res.Verdict {
		case linearize.Linearizable:
			t.Logf("key %d: %v", k, res)
		default:
			t.Errorf("key %d (%.8s…; the workload's seed %d): the store's history %v", k, rec.keys[k], cfg.Seed, res)
		}
	}
	t.Logf("linearizability workload: %v", rec.stats)
	return rec.stats
}

func (cfg *LinearizableConfig) defaults() {
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&cfg.Keys, 3)
	set(&cfg.Ops, 3000)
	setD(&cfg.Duration, 2*time.Second)
	setD(&cfg.Lease, 40*time.Millisecond)
	setD(&cfg.Retention, 100*time.Millisecond)
	switch {
	case cfg.Slack == 0:
		cfg.Slack = 5 * time.Millisecond
	case cfg.Slack < 0:
		cfg.Slack = 0
	}
}

// recorder holds the history of a run.
type recorder struct {
	cfg   LinearizableConfig
	s     keystore.Store
	start time.Time
	keys  []string
	seq   atomic.Int64 // orders calls and returns
	ops   atomic.Int64 // calls made or begun

	mu      sync.Mutex
	history [][]linearize.KeyOp // by key
	stats   LinearizableStats
}

// call runs one operation on key k and records it. It reports false when
// the run's budget of calls is spent (nothing was called).
func (r *recorder) call(ctx context.Context, client, k int, in linearize.KeyInput) (linearize.KeyOutput, bool) {
	if r.ops.Add(1) > int64(r.cfg.Ops) {
		return linearize.KeyOutput{}, false
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linCallTimeout)
	defer cancel()
	key := r.keys[k]
	in.Start = time.Since(r.start)
	callSeq := r.seq.Add(1)
	var out linearize.KeyOutput
	switch in.Kind {
	case linearize.Claim:
		out.Claim, out.Err = r.s.Claim(cctx, key, keystore.ClaimArgs{Fingerprint: in.Fingerprint, Lease: in.Duration, Token: in.Token})
	case linearize.Extend:
		out.Remaining, out.Err = r.s.Extend(cctx, key, in.Token, in.Duration)
	case linearize.Complete:
		out.Err = r.s.Complete(cctx, key, in.Token, in.Record, in.Duration)
	case linearize.Release:
		out.Err = r.s.Release(cctx, key, in.Token)
	}
	retSeq := r.seq.Add(1)
	in.End = time.Since(r.start)
	lost := errors.Is(out.Err, keystore.ErrLeaseLost)
	if out.Err != nil && !lost {
		in.End, retSeq = linearize.Forever, linearize.Pending
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history[k] = append(r.history[k], linearize.KeyOp{Client: client, Call: callSeq, Return: retSeq, Input: in, Output: out})
	st := &r.stats
	st.ops++
	switch {
	case lost:
		st.LeaseLost++
	case out.Err != nil:
		st.Unknown++
	case in.Kind == linearize.Claim:
		switch {
		case out.Claim.Acquired:
			st.Acquired++
			if out.Claim.TookOver {
				st.TookOver++
			}
		case out.Claim.State == keystore.InFlight:
			st.InFlight++
		case out.Claim.State == keystore.Completed:
			st.Completed++
		}
	}
	return out, true
}

// client is one goroutine of the workload.
type client struct {
	rec *recorder
	id  int
	rng *rand.Rand
	seq int
	old [][]keystore.Token // by key: the tokens this client held, newest last
}

func (c *client) lease() time.Duration {
	return []time.Duration{c.rec.cfg.Lease / 2, c.rec.cfg.Lease, 2 * c.rec.cfg.Lease}[c.rng.IntN(3)]
}

// pause sleeps for a random time between lo and hi times d: the time a
// handler works.
func (c *client) pause(ctx context.Context, d time.Duration, lo, hi float64) {
	t := time.NewTimer(time.Duration((lo + c.rng.Float64()*(hi-lo)) * float64(d)))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *client) record(tok keystore.Token, variant string) []byte {
	return record.Append(nil, record.Record{
		StatusCode: 200 + int(tok%4),
		Header:     http.Header{"Content-Type": {"application/geo+json"}, "X-Token": {strconv.FormatUint(uint64(tok), 10)}},
		Body:       []byte(fmt.Sprintf(`{"client":%d,"token":%d,"variant":%q}`, c.id, tok, variant)),
	})
}

func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		k := c.rng.IntN(c.rec.cfg.Keys)
		if !c.session(ctx, k) {
			return
		}
	}
}

// session claims key k and, if it acquires it, plays a holder's part. It
// reports false when the run's budget of calls is spent.
func (c *client) session(ctx context.Context, k int) bool {
	call := func(in linearize.KeyInput) (linearize.KeyOutput, bool) {
		return c.rec.call(ctx, c.id, k, in)
	}
	// Now and then, a stale owner: a token this client held before.
	if old := c.old[k]; len(old) > 0 && c.rng.IntN(8) == 0 {
		tok := old[c.rng.IntN(len(old))]
		in := linearize.KeyInput{Token: tok}
		switch c.rng.IntN(3) {
		case 0:
			in.Kind, in.Duration = linearize.Extend, c.lease()
		case 1:
			in.Kind, in.Record, in.Duration = linearize.Complete, c.record(tok, "late"), c.rec.cfg.Retention
		case 2:
			in.Kind = linearize.Release
		}
		if _, ok := call(in); !ok {
			return false
		}
	}

	c.seq++
	var fp keystore.Fingerprint
	copy(fp[:], fmt.Sprintf("c%d.%d", c.id, c.seq)) // unique to this Claim
	lease := c.lease()
	tok := keystore.NewToken()
	out, ok := call(linearize.KeyInput{Kind: linearize.Claim, Token: tok, Fingerprint: fp, Duration: lease})
	if !ok {
		return false
	}
	if out.Err != nil && !errors.Is(out.Err, keystore.ErrLeaseLost) && c.rng.IntN(4) > 0 {
		// The Claim may have acquired the key: release it by its token,
		// as the middleware does (and, one time in four, walk away).
		if _, ok := call(linearize.KeyInput{Kind: linearize.Release, Token: tok}); !ok {
			return false
		}
	}
	if out.Err != nil || !out.Claim.Acquired {
		c.pause(ctx, c.rec.cfg.Lease, 0, 1)
		return true
	}
	if c.rng.IntN(16) == 0 {
		// The Claim again, with its token: a client library's resend.
		if _, ok := call(linearize.KeyInput{Kind: linearize.Claim, Token: tok, Fingerprint: fp, Duration: lease}); !ok {
			return false
		}
	}
	c.old[k] = append(c.old[k], tok)
	if len(c.old[k]) > 8 {
		c.old[k] = c.old[k][1:]
	}

	// Work, renewing the lease now and then; in one session out of four,
	// for longer than the lease at some point, so that the lease runs out
	// while the holder still works and its next call must be fenced.
	overrun := c.rng.IntN(4) == 0
	for c.rng.IntN(3) > 0 {
		c.pause(ctx, lease, 0, 0.6)
		if overrun && c.rng.IntN(2) == 0 {
			c.pause(ctx, lease, 1.2, 2)
			overrun = false
		}
		lease = c.lease()
		if _, ok := call(linearize.KeyInput{Kind: linearize.Extend, Token: tok, Duration: lease}); !ok {
			return false
		}
	}
	if overrun {
		c.pause(ctx, lease, 1.2, 2)
	} else {
		c.pause(ctx, lease, 0, 0.5)
	}

	switch n := c.rng.IntN(10); {
	case n < 6:
		rec := c.record(tok, "first")
		if _, ok := call(linearize.KeyInput{Kind: linearize.Complete, Token: tok, Record: rec, Duration: c.rec.cfg.Retention}); !ok {
			return false
		}
		// Repeats of its own work, and one that is not.
		for range c.rng.IntN(3) {
			var in linearize.KeyInput
			switch c.rng.IntN(4) {
			case 0, 1:
				in = linearize.KeyInput{Kind: linearize.Complete, Token: tok, Record: rec, Duration: c.rec.cfg.Retention}
			case 2:
				in = linearize.KeyInput{Kind: linearize.Extend, Token: tok, Duration: c.lease()}
			case 3:
				in = linearize.KeyInput{Kind: linearize.Complete, Token: tok, Record: c.record(tok, "second"), Duration: c.rec.cfg.Retention}
			}
			if _, ok := call(in); !ok {
				return false
			}
		}
	case n < 9:
		for range 1 + c.rng.IntN(2) {
			if _, ok := call(linearize.KeyInput{Kind: linearize.Release, Token: tok}); !ok {
				return false
			}
		}
	default:
		// Walk away: the lease runs out.
	}
	return true
}
