package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/middleware"
)

// replicaSet is the receiver as a team deploys it: several processes, this
// same program in -serve-receiver mode, each on its own loopback port, on
// one key store, behind a balancer (balancer.go). Each replica appends its
// handler runs, and the writes its feature store took, to a run log of its
// own, which outlives a SIGKILL and every restart; the run counts are the
// sums over the replicas' logs.
//
// On PostgreSQL the feature table is shared: writes and effects are read
// from its writes column, which covers every replica. On Redis the
// features are kept in Redis beside the keys, shared too: writes and
// effects are read from the counters each feature's hash keeps, written in
// the MULTI of its write (redisCounts).
type replicaSet struct {
	kids []*child
	bal  *balancer
	pg   bool // effects from the shared PostGIS table
	// killAfterEffect aims each SIGKILL after a run's effect, before its
	// key's completion (-kill-after-effect), instead of inside its write.
	killAfterEffect bool
	// Redis: the store's URL and the key prefixes of the replicas, under
	// which the features are.
	redisURL      string
	redisPrefixes []string

	mu              sync.Mutex
	rng             *rand.Rand
	restarts        int // graceful (SIGTERM) restarts
	termInRun       int // of those, with a handler run logged and not finished
	kills, inRun    int // SIGKILLs; of those, with a handler run logged and not finished
	afterEffect     int // SIGKILLs aimed after a run's effect: of those, with the effect logged last
	restartedAll    int // restarts of every replica before the check
	restartDuration time.Duration
}

// maxReceivers bounds -receivers.
const maxReceivers = 16

// newReplicaSet starts o.receivers replicas on st's store and the balancer
// in front of them.
func newReplicaSet(ctx context.Context, st *storeSetup, o options, stderr io.Writer) (*replicaSet, error) {
	n, seed := o.receivers, o.seed
	if err := createTables(ctx, st); err != nil {
		return nil, err
	}
	rs := &replicaSet{pg: st.kind == postgresStore, rng: rand.New(rand.NewPCG(seed, 0x5e7))}
	rs.killAfterEffect = o.killAfterEffect
	if st.kind == redisStore {
		rs.redisURL = st.direct
		if !o.splitKeys {
			rs.redisPrefixes = []string{st.cfg.RedisPrefix}
		}
		for i := range n {
			if o.splitKeys {
				rs.redisPrefixes = append(rs.redisPrefixes, splitPrefix(st, i))
			}
		}
	}
	// The replicas start at once: each start is a process start and a
	// connection to the store.
	rs.kids = make([]*child, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			extra := []string{"-log-effects", "-effect-delay", o.effectDelay.String()}
			if o.splitKeys { // a later flag wins: a prefix of the replica's own
				extra = append(extra, "-redis-prefix", splitPrefix(st, i))
			}
			c, err := childOn(st, stderr, extra...)
			if err != nil {
				errs[i] = err
				return
			}
			rs.kids[i] = c // Close removes its run log, started or not
			errs[i] = c.start(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		rs.Close()
		return nil, err
	}
	addrs := make([]string, n)
	for i, c := range rs.kids {
		addrs[i] = c.addr
	}
	var err error
	if rs.bal, err = newBalancer(addrs, o.balance, seed); err != nil {
		rs.Close()
		return nil, err
	}
	return rs, nil
}

func (rs *replicaSet) URL() string { return rs.bal.URL() }

// logs sums the replicas' run logs.
func (rs *replicaSet) logs() (logCounts, error) {
	sum := logCounts{attempts: map[string]int{}, effects: map[string]int{}, writes: map[string]int{}}
	for _, c := range rs.kids {
		f, err := os.Open(c.runLog)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return logCounts{}, err
		}
		l, err := readRunLogAll(f)
		f.Close()
		if err != nil {
			return logCounts{}, err
		}
		sum.add(l)
	}
	return sum, nil
}

// Writes: the writes column (PostgreSQL), or the writes counters of the
// features in Redis.
func (rs *replicaSet) Writes(ctx context.Context) (map[string]int, error) {
	if rs.pg {
		return pgWrites(ctx, rs.kids[0].direct, rs.kids[0].table)
	}
	_, writes, err := redisCounts(ctx, rs.redisURL, rs.redisPrefixes)
	return writes, err
}

// Runs: the attempts of every replica, and the effects of the writes column
// (PostgreSQL) or of the upserts counters of the features in Redis.
func (rs *replicaSet) Runs(ctx context.Context) (runs, error) {
	l, err := rs.logs()
	if err != nil {
		return runs{}, err
	}
	if rs.pg {
		if l.effects, err = pgWrites(ctx, rs.kids[0].direct, rs.kids[0].table); err != nil {
			return runs{}, err
		}
	} else if l.effects, _, err = redisCounts(ctx, rs.redisURL, rs.redisPrefixes); err != nil {
		return runs{}, err
	}
	return runs{Attempts: l.attempts, Effects: l.effects}, nil
}

// splitPrefix is replica i's own key prefix with o.splitKeys.
func splitPrefix(st *storeSetup, i int) string { return fmt.Sprintf("%sr%d:", st.cfg.RedisPrefix, i) }

// restartAll stops every replica in turn with SIGTERM and starts it again
// on its port, each once the one before answers GET /healthz: a redeploy
// of the whole set, after which what was acknowledged must still be there.
func (rs *replicaSet) restartAll(ctx context.Context) error {
	for _, c := range rs.kids {
		if err := c.terminate(); err != nil {
			return err
		}
		if err := c.start(ctx); err != nil {
			return err
		}
		if err := healthy(ctx, c.URL()); err != nil {
			return err
		}
	}
	rs.mu.Lock()
	rs.restartedAll++
	rs.mu.Unlock()
	return nil
}

func (rs *replicaSet) Outcomes() map[middleware.Outcome]int { return nil }

func (rs *replicaSet) Close() {
	if rs.bal != nil {
		rs.bal.Close()
	}
	var wg sync.WaitGroup
	for _, c := range rs.kids {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
	}
	wg.Wait()
}

// rollingRestart stops each replica in turn with SIGTERM (the service
// drains: it takes no new connection and finishes the requests it has),
// once a handler run of its is in progress if one starts within a second,
// starts it again on its port, and goes on to the next only once the new
// one answers GET /healthz with 200.
func (rs *replicaSet) rollingRestart(ctx context.Context) error {
	start := time.Now()
	for _, c := range rs.kids {
		in := waitInRun(ctx, c.runLog, time.Second)
		if err := c.terminate(); err != nil {
			return err
		}
		if err := c.start(ctx); err != nil {
			return err
		}
		if err := healthy(ctx, c.URL()); err != nil {
			return err
		}
		rs.mu.Lock()
		rs.restarts++
		if in {
			rs.termInRun++
		}
		rs.mu.Unlock()
	}
	rs.mu.Lock()
	rs.restartDuration += time.Since(start)
	rs.mu.Unlock()
	return nil
}

// killReplica SIGKILLs a replica chosen by the seed, once a handler run of
// its own is in progress if one starts within a second (its run log ends
// with a run line: the run is about to write, or paused in the child's
// write delay, not finished), and starts it again on its port. The keys it
// held stay claimed until their lease runs out; another replica takes them
// over then.
func (rs *replicaSet) killReplica(ctx context.Context) error {
	rs.mu.Lock()
	c := rs.kids[rs.rng.IntN(len(rs.kids))]
	rs.mu.Unlock()
	var in, after bool
	if rs.killAfterEffect {
		after = waitAfterEffect(ctx, c.runLog, time.Second)
	} else {
		in = waitInRun(ctx, c.runLog, time.Second)
	}
	if err := c.kill(ctx); err != nil {
		return err
	}
	rs.mu.Lock()
	rs.kills++
	if in {
		rs.inRun++
	}
	if after {
		rs.afterEffect++
	}
	rs.mu.Unlock()
	return healthy(ctx, c.URL())
}

// waitInRun polls a run log until its last line is a run line written
// since the call, and reports whether it saw one before limit.
func waitInRun(ctx context.Context, log string, limit time.Duration) bool {
	size := func() int64 {
		fi, err := os.Stat(log)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	from := size()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if n := size(); n > from {
			if strings.HasPrefix(lastLine(log), runLogRun+" ") {
				return true
			}
			from = n
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// waitAfterEffect polls a run log until its last line, written since the
// call, records an effect (a took or wrote line: the feature store took a
// run's write, and the handler has yet to return and the middleware to
// complete its key), and reports whether it saw one before limit.
func waitAfterEffect(ctx context.Context, log string, limit time.Duration) bool {
	size := func() int64 {
		fi, err := os.Stat(log)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	from := size()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if n := size(); n > from {
			l := lastLine(log)
			if strings.HasPrefix(l, runLogTook+" ") || strings.HasPrefix(l, runLogWrote+" ") {
				return true
			}
			from = n
		}
		time.Sleep(200 * time.Microsecond)
	}
	return false
}

// lastLine returns the last complete line of the file at path ("" if none).
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	const tail = 512
	off := max(0, fi.Size()-tail)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	s := string(buf)
	end := strings.LastIndexByte(s, '\n')
	if end < 0 {
		return ""
	}
	s = s[:end]
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// terminate stops the child with SIGTERM and waits for it to exit (it
// drains its requests; SIGKILL after drainLimit).
func (c *child) terminate() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return errors.New("terminate: the child is not running")
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		c.cmd = nil
		if err != nil {
			return fmt.Errorf("the child did not exit cleanly on SIGTERM: %w", err)
		}
		return nil
	case <-time.After(drainLimit):
		_ = c.cmd.Process.Kill()
		<-done
		c.cmd = nil
		return fmt.Errorf("the child did not exit within %v of SIGTERM", drainLimit)
	}
}

// drainLimit bounds a graceful stop: the child's own Shutdown gives up
// after 5 s.
const drainLimit = 15 * time.Second

// healthy waits until GET url/healthz answers 200, up to startTimeout.
func healthy(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/healthz: not healthy in time (%v)", url, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkReplicas checks the flags of a run with several receivers.
func (o options) checkReplicas() error {
	switch {
	case o.receivers < 1 || o.receivers > maxReceivers:
		return fmt.Errorf("-receivers %d: want 1 to %d", o.receivers, maxReceivers)
	case o.balance != balanceRoundRobin && o.balance != balanceRandom:
		return fmt.Errorf("-balance %q: want %s or %s", o.balance, balanceRoundRobin, balanceRandom)
	case o.killReplica < 0 || o.killReplica > maxKills:
		return fmt.Errorf("-kill-replica %d: want 0 to %d", o.killReplica, maxKills)
	case (o.rollingRestart || o.killReplica > 0) && o.receivers < 2:
		return errors.New("-rolling-restart and -kill-replica need -receivers 2 or more")
	case o.killAfterEffect && o.killReplica == 0:
		return errors.New("-kill-after-effect aims the kills of -kill-replica")
	case o.effectDelay < 0 || o.effectDelay > 5*time.Second:
		return fmt.Errorf("-effect-delay %v: want 0 to 5s", o.effectDelay)
	case o.effectDelay > 0 && o.receivers < 2:
		return errors.New("-effect-delay needs -receivers 2 or more")
	case o.reshard && o.receivers < 2:
		return errors.New("-reshard needs -receivers 2 or more")
	case o.reshard && (o.store != "memory" && o.store != "" || o.failover || o.restartRedis > 0 || o.storeFaults || o.stallFor > 0 || o.killReceiver > 0 || o.killSender > 0 || o.updates > 0):
		return errors.New("-reshard runs on a Redis Cluster of its own: not with -store, -failover, -restart-redis, -store-faults, -stall-for, -kill-receiver, -kill-sender or -updates")
	case o.receivers == 1:
		return nil
	case o.reshard:
		return nil
	case o.failover || o.restartRedis > 0:
		return errors.New("-receivers runs on the store -store names: not with -failover or -restart-redis")
	case o.kind() == memoryStore:
		return fmt.Errorf("-receivers %d needs -store redis://… or postgres://…: the memory key store is one process's memory, so each replica would hold keys of its own and the same key would run once on each", o.receivers)
	case o.killReceiver > 0 || o.killSender > 0 || o.updates > 0 || o.naive || o.forgetful:
		return errors.New("-receivers runs without -kill-receiver (see -kill-replica), -kill-sender or -updates")
	}
	return nil
}

// replicaStats is what the table shows of the replicas.
type replicaStats struct {
	n                   int
	policy              string
	spread              []int64 // requests each replica answered, through the balancer
	skipped, failed     int64
	restarts, termInRun int
	restartTime         time.Duration
	kills, inRun        int
	afterEffect         int
	killAfterEffect     bool
	restartedAll        int
}

func (rs *replicaSet) stats() *replicaStats {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return &replicaStats{
		n: len(rs.kids), policy: rs.bal.policy, spread: rs.bal.spread(),
		skipped: rs.bal.skipped.Load(), failed: rs.bal.failed.Load(),
		restarts: rs.restarts, termInRun: rs.termInRun, restartTime: rs.restartDuration, kills: rs.kills, inRun: rs.inRun,
		afterEffect: rs.afterEffect, killAfterEffect: rs.killAfterEffect, restartedAll: rs.restartedAll,
	}
}

// withReplicaFaults adds the replica faults to fs: the kills at seeded
// points of the first pass (between 10% and 85% of the deliveries), the
// rolling restart at a tenth of it, so that the deliveries run all along.
func withReplicaFaults(o options, fs []storeFault, rs *replicaSet, deliveries int) []storeFault {
	if rs == nil {
		return fs
	}
	rng := rand.New(rand.NewPCG(o.seed, 0xdead))
	for range o.killReplica {
		fs = append(fs, storeFault{name: "replica SIGKILL", at: deliveries/10 + rng.IntN(max(1, deliveries*3/4)), do: rs.killReplica})
	}
	if o.rollingRestart {
		fs = append(fs, storeFault{name: "rolling restart", at: deliveries / 10, do: rs.rollingRestart})
	}
	slices.SortStableFunc(fs, func(a, b storeFault) int { return a.at - b.at })
	return fs
}

// syncWriter serialises the Writes of several goroutines to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
