package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/middleware"
)

// chaos runs the harness and prints its table.
func chaos(ctx context.Context, o options, stdout, stderr io.Writer) int {
	start := time.Now()
	stderr = &syncWriter{w: stderr} // child receivers copy their stderr to it, each from a goroutine
	suffix := fmt.Sprintf("%d_%08x", o.seed, rand.Uint32())
	var redis *testkit.RedisServer // -restart-redis: the harness's own
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
	var cluster *testkit.Cluster // -reshard: the harness's own
	if o.reshard {
		var err error
		if cluster, o.store, err = startReshardCluster(ctx); err != nil {
			fmt.Fprintf(stderr, "chaos: Redis Cluster: %v\n", err)
			return 1
		}
		defer cluster.Close()
	}
	st, err := setupStore(o, suffix)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	if o.features != nil {
		st.cfg.WrapFeatures = func(service.FeatureStore) service.FeatureStore { return o.features() }
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
		reps  *replicaSet
		label = o.store
	)
	switch {
	case o.naive:
		rcv, err = newNaive()
		label += " (naive receiver, no middleware)"
	case o.forgetful:
		rcv, err = newForgetful()
		label += " (forgetful receiver: acknowledges, then loses record and effect)"
	case o.killReceiver > 0:
		kids, err = newChild(ctx, st, stderr)
		rcv = kids
		label += ", receiver in a child process"
	case o.receivers > 1:
		reps, err = newReplicaSet(ctx, st, o, stderr)
		rcv = reps
		label += fmt.Sprintf(", %d receiver processes behind a %s balancer", o.receivers, o.balance)
	default:
		rcv, err = newInProcess(ctx, st)
	}
	if err != nil {
		fmt.Fprintf(stderr, "chaos: receiver: %v\n", err)
		return 1
	}
	defer rcv.Close()
	if st.kind != memoryStore {
		label = service.Redacted(o.store) + label[len(o.store):]
	}
	if o.storeFaults {
		label += ", store faults"
	}
	if o.stallFor > 0 {
		label += fmt.Sprintf(", a %v store stall", o.stallFor)
	}
	if o.pathSpellings {
		label += ", each attempt to another spelling of the path"
	}
	if o.stamp {
		label += ", each event stamped with its observation_time (a second run is stale)"
	}
	switch {
	case fo != nil:
		label += fmt.Sprintf(" (own primary and replica, failover; WaitReplicas %d)", o.waitReplicas)
	case redis != nil && o.redisAOF:
		label += " (own redis-server, appendonly yes, appendfsync always)"
	case redis != nil:
		label += " (own redis-server, no persistence)"
	case cluster != nil:
		label += " (own Redis Cluster, 3 masters with a replica each, no persistence; slots of live keys migrated)"
	}

	proxy, proxyURL, err := startProxy(rcv.URL(), o.seed)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	defer proxy.Close()

	evs := makeEvents(o.events, o.seed, suffix, o.stamp)
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
		t     tally
		dl    deadLetters
		acked acks
		done  atomic.Int64
	)
	senders, closeIdle, err := newSenders(o.senders, o.attempts, o.seed, &t, &dl, o.pathSpellings)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	defer closeIdle()

	// Store and receiver faults, at seeded points of the first pass.
	faults := plannedFaults(o, st, kids, redis, fo, &rep, len(jobs))
	faults = withReplicaFaults(o, faults, reps, len(jobs))
	faults = withReshard(faults, cluster, st, &rep, len(jobs))
	faultsDone := make(chan error, 1)
	go func() { faultsDone <- fire(ctx, faults, &done) }()

	// The first pass.
	queue := make(chan *event)
	var wg sync.WaitGroup
	if o.killSender > 0 {
		rep.senderKills, rep.journalPending, err = killedSenderPass(ctx, o, proxyURL, jobs, &t, &dl, &acked, stderr)
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
				if _, err := s.Deliver(ctx, client.Delivery{URL: proxyURL + "/features", Key: e.key, Body: e.body, ContentType: "application/geo+json"}); err == nil {
					acked.add(e.key)
				}
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
	if rep.proxy, err = drainProxy(ctx, proxy); err != nil {
		fmt.Fprintf(stderr, "chaos: proxy shutdown: %v\n", err)
		return 1
	}

	// With replicas, a redeploy of them all first: what was acknowledged
	// must survive it, and GET /features/{id} through the balancer must
	// find every acknowledged event's feature.
	lost := map[string]bool{}
	rep.acked = acked.len()
	if reps != nil {
		if err := reps.restartAll(ctx); err != nil {
			fmt.Fprintf(stderr, "chaos: restarting the replicas: %v\n", err)
			return 1
		}
		missing, err := missingFeatures(ctx, reps.URL(), evs, &acked)
		if err != nil {
			fmt.Fprintf(stderr, "chaos: reading the features after the restart: %v\n", err)
			return 1
		}
		for _, id := range missing {
			lost[id] = true
		}
	}
	// One receiver: redeployed too (SIGTERM, started again on the same
	// store), except on the memory store, which keeps nothing across a
	// restart by design; then the same GET of every acknowledged event,
	// and on Redis the counters beside each feature (the in-process run
	// counter saw the writes Redis took, not those it kept).
	if d, ok := rcv.(redeployable); ok {
		if rep.redeployed, err = d.redeploy(ctx); err != nil {
			fmt.Fprintf(stderr, "chaos: redeploying the receiver: %v\n", err)
			return 1
		}
		rep.featuresRead = true
		missing, err := missingFeatures(ctx, d.URL(), evs, &acked)
		if err != nil {
			fmt.Fprintf(stderr, "chaos: reading the features after the restart: %v\n", err)
			return 1
		}
		for _, id := range missing {
			lost[id] = true
		}
		if st.kind == redisStore {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, kept, err := redisCounts(rctx, st.direct, []string{st.cfg.RedisPrefix})
			cancel()
			if err != nil {
				fmt.Fprintf(stderr, "chaos: reading the feature counters in Redis: %v\n", err)
				return 1
			}
			for _, e := range evs {
				if e.id != "" && acked.has(e.key) && kept[e.id] == 0 {
					lost[e.id] = true
				}
			}
		}
	}

	// Before anything is sent again: every acknowledged event's effect
	// must be there. A re-send would run an event whose record was lost
	// with its effect, and hide the loss as one replay fewer.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	before, err := rcv.Writes(wctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "chaos: reading the feature writes: %v\n", err)
		return 1
	}
	for _, e := range evs {
		if e.id != "" && acked.has(e.key) && before[e.id] == 0 {
			lost[e.id] = true
		}
	}
	rep.ackedMissing = len(lost)

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
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
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
			lost[e.id] = true
		}
	}
	for id := range lost {
		rep.lost++
		rep.lostIDs = append(rep.lostIDs, id)
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
	if reps != nil {
		rep.replicas = reps.stats()
	}
	rep.totalTime = time.Since(start)
	rep.print(stdout)
	if !rep.ok() {
		return 1
	}
	return 0
}
