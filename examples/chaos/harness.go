package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/internal/faultproxy"
	"github.com/geoidem/geoidem/internal/ingest"
	"github.com/geoidem/geoidem/internal/redisserver"
	"github.com/geoidem/geoidem/middleware"
)

// event is one delivery's worth of work: a Feature, its key, and whether
// it is invalid (no id) or sent twice at once.
type event struct {
	id    string // the feature id; "" for an invalid event
	key   string
	body  []byte
	twice *rendezvous // non-nil: sent by two senders at the same moment
}

// rendezvous lets the two senders of a duplicate start together.
type rendezvous struct {
	n  atomic.Int32
	ch chan struct{}
}

// arrive waits, at most a second, for the other sender.
func (r *rendezvous) arrive() {
	if r.n.Add(1) == 2 {
		close(r.ch)
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-r.ch:
	case <-t.C:
	}
}

// Fractions of the events that are invalid and that are sent twice.
const (
	invalidShare = 0.03
	twiceShare   = 0.05
)

// makeEvents returns n events, seeded: a fixed number (at least one each)
// are invalid or sent twice, at seeded positions.
func makeEvents(n int, seed uint64, run string) []event {
	rng := rand.New(rand.NewPCG(seed, 0xe7e47))
	perm := rng.Perm(n)
	invalid := max(1, int(float64(n)*invalidShare+0.5))
	twice := max(1, int(float64(n)*twiceShare+0.5))
	if n < 2 {
		invalid, twice = 0, 0
	}
	kind := make([]byte, n)
	for _, i := range perm[:min(invalid, n)] {
		kind[i] = 'x'
	}
	for _, i := range perm[min(invalid, n):min(invalid+twice, n)] {
		kind[i] = '2'
	}
	evs := make([]event, n)
	for i := range evs {
		lon, lat := rng.Float64()*360-180, rng.Float64()*180-90
		e := event{key: fmt.Sprintf("chaos-%s-%d", run, i)}
		if kind[i] == 'x' {
			e.body = fmt.Appendf(nil, `{"type":"Feature","geometry":{"type":"Point","coordinates":[%.6f,%.6f]},"properties":{"seq":%d}}`, lon, lat, i)
		} else {
			e.id = "f" + strconv.Itoa(i)
			e.body = fmt.Appendf(nil, `{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%.6f,%.6f]},"properties":{"seq":%d}}`, e.id, lon, lat, i)
		}
		if kind[i] == '2' {
			e.twice = &rendezvous{ch: make(chan struct{})}
		}
		evs[i] = e
	}
	return evs
}

// deadLetters is the in-memory dead-letter sink.
type deadLetters struct {
	mu  sync.Mutex
	dls []client.DeadLetter
}

func (d *deadLetters) Put(_ context.Context, dl client.DeadLetter) error {
	dl.Payload = slices.Clone(dl.Payload)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dls = append(d.dls, dl)
	return nil
}

func (d *deadLetters) take() []client.DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.dls
	d.dls = nil
	return out
}

// tally counts what the senders saw, attempt by attempt.
type tally struct {
	attempts, replays, conflicts, invalid, unavailable, netErrors atomic.Int64
}

func (t *tally) observe(a client.Attempt) {
	t.attempts.Add(1)
	if a.Replayed {
		t.replays.Add(1)
	}
	switch a.StatusCode {
	case http.StatusConflict:
		t.conflicts.Add(1)
	case http.StatusUnprocessableEntity:
		t.invalid.Add(1)
	case http.StatusServiceUnavailable:
		t.unavailable.Add(1)
	case 0:
		t.netErrors.Add(1)
	}
}

// newSenders returns n paired senders sharing one transport without
// keep-alives (so that every fault reaches a sender rather than being
// re-sent by net/http), each with its own seeded jitter.
func newSenders(n, attempts int, seed uint64, t *tally, dl client.DeadLetterSink) ([]*client.Sender, func(), error) {
	tr := &http.Transport{DisableKeepAlives: true, MaxConnsPerHost: 0}
	hc := &http.Client{Transport: tr}
	ss := make([]*client.Sender, n)
	for i := range ss {
		s, err := client.New(hc, client.Config{
			Backoff:        client.Backoff{Base: 10 * time.Millisecond, Cap: 200 * time.Millisecond},
			MaxAttempts:    attempts,
			Deadline:       deliveryLimit,
			AttemptTimeout: attemptTimeout,
			MaxRetryAfter:  maxRetryAfter,
			DeadLetter:     dl,
			OnAttempt:      t.observe,
			Rand:           rand.NewPCG(seed, uint64(i)+1),
		})
		if err != nil {
			return nil, nil, err
		}
		ss[i] = s
	}
	return ss, tr.CloseIdleConnections, nil
}

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
	senderKills                   int
	journalPending                int // -1: no journal
	storeErrors, released         int // -1: unknown
	writtenTwice, lost, stored    int
	runs                          runCount
	twiceIDs, lostIDs             []string
	firstPass, redrive, totalTime time.Duration
}

func (r *report) ok() bool {
	return r.runs.twice == 0 && r.writtenTwice == 0 && r.lost == 0 && r.journalPending <= 0
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
	row("Redis restarts", "%d", r.restarts)
	row("Redis failovers", "%d", r.failovers)
	row("sender kills", "%d", r.senderKills)
	row("journal pending", "%s", unknown(r.journalPending))
	row("store 503s (fail closed)", "%s", unknown(r.storeErrors))
	row("handler 5xx (released)", "%s", unknown(r.released))
	rc := r.runs
	row("runs reaching the write", "%d (%d events more than once)", rc.attempts, rc.attemptedTwice)
	row("runs that took effect", "%d (%d rolled back or refused; %s)", rc.effects, rc.undone, rc.source)
	row("guard skips (in-process)", "%d%s", rc.skips, sample(rc.skipIDs))
	row("features stored", "%d", r.stored)
	row("events run twice", "%d%s", rc.twice, sample(rc.twiceIDs))
	row("features written twice", "%d%s", r.writtenTwice, sample(r.twiceIDs))
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

// storeFault is one store or receiver fault, fired when the first pass has
// finished at deliveries.
type storeFault struct {
	at   int
	name string
	do   func(ctx context.Context) error
}

// chaos runs the harness and prints its table.
func chaos(ctx context.Context, o options, stdout, stderr io.Writer) int {
	start := time.Now()
	suffix := fmt.Sprintf("%d_%08x", o.seed, rand.Uint32())
	var redis *redisserver.Server // -restart-redis: the harness's own
	if o.restartRedis > 0 {
		var err error
		if redis, err = startRedis(ctx, o.redisAOF); err != nil {
			fmt.Fprintf(stderr, "chaos: redis-server: %v\n", err)
			return 1
		}
		defer redis.Stop()
		o.store = "redis://" + redis.Addr() + "/0"
	}
	var fo *failover // -failover: the harness's own primary and replica
	if o.failover {
		var err error
		if fo, err = startFailover(ctx); err != nil {
			fmt.Fprintf(stderr, "chaos: failover set-up: %v\n", err)
			return 1
		}
		defer fo.stop()
		o.store = "redis://" + fo.front.Addr() + "/0"
	}
	st, err := setupStore(o, suffix)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	defer func() {
		if err := st.cleanup(); err != nil {
			fmt.Fprintf(stderr, "chaos: cleanup: %v\n", err)
		}
	}()

	// The receiver.
	var (
		rcv   receiver
		kids  *child
		label = o.store
	)
	switch {
	case o.naive:
		rcv, err = newNaive()
		label += " (naive receiver, no middleware)"
	case o.killReceiver > 0:
		kids, err = newChild(ctx, st, stderr)
		rcv = kids
		label += ", receiver in a child process"
	default:
		rcv, err = newInProcess(ctx, st.cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "chaos: receiver: %v\n", err)
		return 1
	}
	defer rcv.Close()
	if st.kind != memoryStore {
		label = ingest.Redacted(o.store) + label[len(o.store):]
	}
	if o.storeFaults {
		label += ", store faults"
	}
	if o.stallFor > 0 {
		label += fmt.Sprintf(", a %v store stall", o.stallFor)
	}
	switch {
	case fo != nil:
		label += fmt.Sprintf(" (own primary and replica, failover; WaitReplicas %d)", o.waitReplicas)
	case redis != nil && o.redisAOF:
		label += " (own redis-server, appendonly yes, appendfsync always)"
	case redis != nil:
		label += " (own redis-server, no persistence)"
	}

	target, _ := url.Parse(rcv.URL())
	proxy, err := faultproxy.New(target, faultproxy.Config{
		Seed:      o.seed,
		LostAck:   0.10,
		Inject503: 0.05,
		Inject429: 0.05,
		Reset:     0.05,
		Delay:     0.05,
		DelayFor:  delayFor, // past the senders' attempt timeout
	})
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	defer proxy.Close()
	proxyURL, err := proxy.Start()
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}

	evs := makeEvents(o.events, o.seed, suffix)
	var jobs []*event
	rep := report{store: label, senders: o.senders, events: len(evs), storeErrors: -1, released: -1, journalPending: -1, stallFor: o.stallFor}
	for i := range evs {
		e := &evs[i]
		jobs = append(jobs, e)
		if e.id == "" {
			rep.invalid++
		}
		if e.twice != nil {
			rep.twice++
			jobs = append(jobs, e) // the second sender takes it next
		}
	}
	rep.deliveries = len(jobs)

	var (
		t    tally
		dl   deadLetters
		done atomic.Int64
	)
	senders, closeIdle, err := newSenders(o.senders, o.attempts, o.seed, &t, &dl)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	defer closeIdle()

	// Store and receiver faults, at seeded points of the first pass.
	faults := plannedFaults(o, st, kids, redis, fo, &rep, len(jobs))
	faultsDone := make(chan error, 1)
	go func() { faultsDone <- fire(ctx, faults, &done) }()

	// The first pass.
	queue := make(chan *event)
	var wg sync.WaitGroup
	if o.killSender > 0 {
		rep.senderKills, rep.journalPending, err = killedSenderPass(ctx, o, proxyURL, jobs, &t, &dl, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "chaos: sender: %v\n", err)
			return 1
		}
		jobs = nil
	}
	for _, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range queue {
				if e.twice != nil && o.senders > 1 {
					e.twice.arrive()
				}
				_, _ = s.Deliver(ctx, client.Delivery{URL: proxyURL + "/features", Key: e.key, Body: e.body, ContentType: "application/geo+json"})
				done.Add(1)
			}
		}()
	}
	for _, e := range jobs {
		select {
		case queue <- e:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(queue)
	wg.Wait()
	if err := <-faultsDone; err != nil {
		fmt.Fprintf(stderr, "chaos: store faults: %v\n", err)
		return 1
	}
	rep.firstPass = time.Since(start)
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", ctx.Err())
		return 1
	}

	// Stop the faults; let every held request land before looking.
	proxy.Pause()
	sctx, cancel := context.WithTimeout(ctx, delayFor+30*time.Second)
	err = proxy.Shutdown(sctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "chaos: proxy shutdown: %v\n", err)
		return 1
	}
	rep.proxy = proxy.Stats()

	// Re-drive the dead letters, as an operator would: same key, same
	// payload, straight to the receiver now that nothing breaks.
	redriveStart := time.Now()
	dls := dl.take()
	rep.deadLettered = len(dls)
	for _, d := range dls {
		switch {
		case d.Reason == "permanent":
			rep.deadInvalid++
		case d.LastStatus == http.StatusConflict:
			rep.dead409++
		case d.LastStatus == http.StatusServiceUnavailable:
			rep.dead503++
		case d.LastStatus == 0:
			rep.deadNoAnswer++
		default:
			rep.deadOther++
		}
	}
	rep.redriven, rep.redriveFailed = redrive(ctx, senders, rcv.URL(), dls, &dl)
	rep.resent, rep.resentReplayed = resend(ctx, senders, rcv.URL(), evs)
	dl.take() // a re-sent invalid event is dead-lettered again: counted above
	rep.redrive = time.Since(redriveStart)

	// The check.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	writes, err := rcv.Writes(wctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "chaos: reading the feature writes: %v\n", err)
		return 1
	}
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	runs, err := rcv.Runs(wctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "chaos: reading the run counts: %v\n", err)
		return 1
	}
	rep.runs = countRuns(runs, effectSource(o))
	rep.stored = len(writes)
	for id, n := range writes {
		if n > 1 {
			rep.writtenTwice++
			rep.twiceIDs = append(rep.twiceIDs, id)
		}
	}
	for _, e := range evs {
		if e.id != "" && writes[e.id] == 0 {
			rep.lost++
			rep.lostIDs = append(rep.lostIDs, e.id)
		}
	}
	rep.attempts, rep.replays, rep.conflicts, rep.invalidAnswers = t.attempts.Load(), t.replays.Load(), t.conflicts.Load(), t.invalid.Load()
	if oc := rcv.Outcomes(); oc != nil {
		rep.storeErrors, rep.released = oc[middleware.StoreError], oc[middleware.Released]
	}
	if st.cut != nil {
		cs := st.cut.Stats()
		rep.cuts, rep.refused, rep.severed = cs.Cuts, cs.Refused, cs.Severed
	}
	if kids != nil {
		rep.kills = kids.Kills()
	}
	rep.totalTime = time.Since(start)
	rep.print(stdout)
	if !rep.ok() {
		return 1
	}
	return 0
}

// redrive delivers every dead letter that did not fail permanently again,
// spread over the senders, and returns how many it re-drove and how many
// of those failed again.
func redrive(ctx context.Context, senders []*client.Sender, base string, dls []client.DeadLetter, sink *deadLetters) (n, failed int) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next = make(chan client.DeadLetter)
	)
	for _, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				_, err := s.Deliver(ctx, client.Delivery{URL: base + "/features", Key: d.Key, Body: d.Payload, ContentType: d.ContentType})
				mu.Lock()
				n++
				if err != nil {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	for _, d := range dls {
		if d.Reason != "permanent" {
			next <- d
		}
	}
	close(next)
	wg.Wait()
	sink.take() // the re-drive's own failures are counted, not re-driven
	return n, failed
}

// plannedFaults returns the store and receiver faults of a run, each at a
// seeded point of the first pass (between 10% and 85% of the deliveries),
// in the order they fire.
func plannedFaults(o options, st *storeSetup, kids *child, redis *redisserver.Server, fo *failover, rep *report, deliveries int) []storeFault {
	var fs []storeFault
	if o.storeFaults && st.cut != nil {
		cutFor := cmp.Or(o.cutFor, cutFor)
		for range 2 {
			fs = append(fs, storeFault{name: "cut", do: func(ctx context.Context) error {
				st.cut.Cut()
				t := time.NewTimer(cutFor)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				st.cut.Restore()
				return nil
			}})
		}
	}
	if o.storeFaults && st.kind == postgresStore {
		for range 3 {
			fs = append(fs, storeFault{name: "pg_terminate_backend", do: func(ctx context.Context) error {
				n, err := st.terminate(ctx)
				rep.terminations++
				rep.terminated += n
				return err
			}})
		}
	}
	if o.stallFor > 0 && st.cut != nil {
		fs = append(fs, storeFault{name: "stall", do: func(ctx context.Context) error {
			st.cut.Stall()
			t := time.NewTimer(o.stallFor)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			st.cut.Restore()
			rep.stalls++
			return nil
		}})
	}
	for range o.pgTerminate {
		fs = append(fs, storeFault{name: "pg_terminate_backend", do: func(ctx context.Context) error {
			n, err := st.terminate(ctx)
			rep.terminations++
			rep.terminated += n
			return err
		}})
	}
	for range o.killReceiver {
		fs = append(fs, storeFault{name: "SIGKILL", do: kids.kill})
	}
	if redis != nil {
		for range o.restartRedis {
			fs = append(fs, storeFault{name: "Redis restart", do: func(ctx context.Context) error {
				rep.restarts++
				return redis.Restart(ctx)
			}})
		}
	}
	if fo != nil {
		fs = append(fs, storeFault{name: "failover", do: func(ctx context.Context) error {
			rep.failovers++
			return fo.run(ctx)
		}})
	}
	rng := rand.New(rand.NewPCG(o.seed, 0xfa17))
	rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	ats := make([]int, len(fs))
	for i := range ats {
		ats[i] = deliveries/10 + rng.IntN(max(1, deliveries*3/4))
	}
	slices.Sort(ats)
	for i := range fs {
		fs[i].at = ats[i]
	}
	return fs
}

// fire runs each fault once the first pass has finished its at
// deliveries. It fires every fault, so that the counts in the table are
// the counts asked for, and returns the first error.
func fire(ctx context.Context, fs []storeFault, done *atomic.Int64) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for _, f := range fs {
		for done.Load() < int64(f.at) {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := f.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}
