package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/examples/internal/faultproxy"
)

// maxUpdates bounds -updates.
const maxUpdates = 20

// checkUpdates checks the flags of an -updates run: it runs alone, on the
// store -store names, without the store or process faults.
func (o options) checkUpdates() error {
	switch {
	case o.updates < 0 || o.updates > maxUpdates:
		return fmt.Errorf("-updates %d: want 0 to %d", o.updates, maxUpdates)
	case o.updates == 0:
		return nil
	case o.storeFaults || o.killReceiver > 0 || o.killSender > 0 || o.restartRedis > 0 || o.failover ||
		o.stallFor > 0 || o.pgTerminate > 0 || o.naive:
		return errors.New("-updates runs with the proxy's faults only: not with -store-faults, -kill-receiver, -kill-sender, -restart-redis, -failover, -stall-for or -pg-terminate")
	}
	return nil
}

// update is one observation of a feature: the j-th of its id, observed j
// seconds after the first, under its own key.
type update struct {
	id   string
	j    int
	key  string
	body []byte
}

// observationBase is when the first observation of every feature was made.
var observationBase = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// makeUpdates returns k observations of each of n features, in the order a
// source produces them: feature by feature, oldest first. Positions are
// seeded.
func makeUpdates(n, k int, seed uint64, run string) []update {
	rng := rand.New(rand.NewPCG(seed, 0x0bde7))
	ups := make([]update, 0, n*k)
	for i := range n {
		id := "u" + strconv.Itoa(i)
		for j := range k {
			lon, lat := rng.Float64()*360-180, rng.Float64()*180-90
			at := observationBase.Add(time.Duration(j) * time.Second).Format(time.RFC3339Nano)
			ups = append(ups, update{id: id, j: j, key: fmt.Sprintf("chaos-%s-%d-%d", run, i, j),
				body: fmt.Appendf(nil, `{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%.6f,%.6f]},"properties":{"observation_time":%q,"obs":%d}}`, id, lon, lat, at, j)})
		}
	}
	return ups
}

// updatesReport is the table of an -updates run.
type updatesReport struct {
	store                       string
	features, perFeature        int
	senders                     int
	attempts, replays, conflict int64
	staleAnswers                int
	deadLettered                int
	redriven, redriveFailed     int
	proxy                       faultproxy.Stats
	stored, lost, stale         int
	lostIDs, staleIDs           []string
	total                       time.Duration
}

func (r *updatesReport) ok() bool { return r.lost == 0 && r.stale == 0 && r.redriveFailed == 0 }

func (r *updatesReport) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	p := r.proxy
	row("store", "%s", r.store)
	row("features", "%d (%d observations each, 1 s apart; %d deliveries)", r.features, r.perFeature, r.features*r.perFeature)
	row("senders", "%d", r.senders)
	row("attempts", "%d", r.attempts)
	row("replays", "%d", r.replays)
	row("409s", "%d", r.conflict)
	row("answered stale (200)", "%d", r.staleAnswers)
	row("dead-lettered (first pass)", "%d", r.deadLettered)
	row("re-driven", "%d (%d failed again)", r.redriven, r.redriveFailed)
	row("proxy requests", "%d (%d forwarded)", p.Requests, p.Forwarded)
	row("proxy faults", "%d lost-ack, %d 503, %d 429, %d reset, %d delay", p.LostAck, p.Inject503, p.Inject429, p.Reset, p.Delay)
	row("features stored", "%d", r.stored)
	row("events lost", "%d%s", r.lost, sample(r.lostIDs))
	row("stale final state", "%d%s", r.stale, sample(r.staleIDs))
	row("time", "%s", r.total.Round(time.Millisecond))
	verdict := "PASS: every feature holds its newest observation"
	if !r.ok() {
		verdict = "FAIL"
	}
	row("result", "%s", verdict)
	_ = tw.Flush()
}

// updatesChaos is an -updates run: -events features, each observed
// -updates times, every observation its own delivery under its own key,
// sent in the order observed by concurrent jittered senders through the
// fault proxy (lost acknowledgements, injected 503 and 429, resets,
// requests held past the senders' timeout: each reorders deliveries), the
// dead letters re-driven at the end. Then every feature must hold its
// newest observation: "stale final state" counts those that do not.
func updatesChaos(ctx context.Context, o options, stdout, stderr io.Writer) int {
	start := time.Now()
	suffix := fmt.Sprintf("%d_%08x", o.seed, rand.Uint32())
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
	rcv, err := newInProcess(ctx, st)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: receiver: %v\n", err)
		return 1
	}
	defer rcv.Close()
	proxy, proxyURL, err := startProxy(rcv.URL(), o.seed)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	defer proxy.Close()
	var (
		t  tally
		dl deadLetters
		mu sync.Mutex
	)
	senders, closeIdle, err := newSenders(o.senders, o.attempts, o.seed, &t, &dl, o.pathSpellings)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	defer closeIdle()
	label := o.store
	if st.kind != memoryStore {
		label = service.Redacted(o.store)
	}
	rep := updatesReport{store: label, features: o.events, perFeature: o.updates, senders: o.senders}
	deliver := func(queue <-chan client.Delivery) (failed int) {
		var wg sync.WaitGroup
		for _, s := range senders {
			wg.Go(func() {
				for d := range queue {
					res, err := s.Deliver(ctx, d)
					mu.Lock()
					if err != nil {
						failed++
					} else if res.StatusCode == http.StatusOK {
						rep.staleAnswers++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return failed
	}

	// The first pass, through the proxy.
	ups := makeUpdates(o.events, o.updates, o.seed, suffix)
	queue := make(chan client.Delivery)
	go func() {
		defer close(queue)
		for _, u := range ups {
			select {
			case queue <- client.Delivery{URL: proxyURL + "/features", Key: u.key, Body: u.body, ContentType: "application/geo+json"}:
			case <-ctx.Done():
				return
			}
		}
	}()
	deliver(queue)
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", ctx.Err())
		return 1
	}
	if rep.proxy, err = drainProxy(ctx, proxy); err != nil {
		fmt.Fprintf(stderr, "chaos: proxy shutdown: %v\n", err)
		return 1
	}

	// The dead letters, re-driven straight to the receiver: old
	// observations arriving last.
	dls := dl.take()
	rep.deadLettered = len(dls)
	queue = make(chan client.Delivery, len(dls))
	for _, d := range dls {
		queue <- client.Delivery{URL: rcv.URL() + "/features", Key: d.Key, Body: d.Body, ContentType: d.ContentType}
	}
	close(queue)
	rep.redriven, rep.redriveFailed = len(dls), deliver(queue)
	dl.take()

	// The check: every feature holds its newest observation.
	newestObs := o.updates - 1
	for i := range o.events {
		id := "u" + strconv.Itoa(i)
		j, found, err := storedObservation(ctx, rcv.URL(), id)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "chaos: reading feature %s: %v\n", id, err)
			return 1
		case !found:
			rep.lost++
			rep.lostIDs = append(rep.lostIDs, id)
		case j != newestObs:
			rep.stored++
			rep.stale++
			rep.staleIDs = append(rep.staleIDs, fmt.Sprintf("%s@%d", id, j))
		default:
			rep.stored++
		}
	}
	rep.attempts, rep.replays, rep.conflict = t.attempts.Load(), t.replays.Load(), t.conflicts.Load()
	rep.total = time.Since(start)
	rep.print(stdout)
	if !rep.ok() {
		return 1
	}
	return 0
}

// storedObservation returns the "obs" property of the feature the receiver
// holds under id.
func storedObservation(ctx context.Context, base, id string) (j int, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/features/"+url.PathEscape(id), nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("GET: %s", resp.Status)
	}
	var f struct {
		Properties struct {
			Obs *int `json:"obs"`
		} `json:"properties"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&f); err != nil || f.Properties.Obs == nil {
		return 0, false, fmt.Errorf("GET: no obs property (%v)", err)
	}
	return *f.Properties.Obs, true, nil
}
