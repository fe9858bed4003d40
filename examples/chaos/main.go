// Command chaos is the proof that geoidem ingests every GeoJSON webhook
// exactly once while the network, the key store and the receiver fail on
// purpose. It runs an ingest receiver (examples/ingest's service: the
// middleware in front of a feature upsert, its feature store wrapped to
// count the handler's runs), a seeded fault-injecting proxy in front of it
// (lost acknowledgements, injected 503 and 429 with Retry-After, connection
// resets, requests held past the senders' timeout), and several paired
// senders (package client) that deliver many events through the proxy:
//
//	go run ./examples/chaos [-store memory|redis://…|postgres://…]
//	                        [-senders 4] [-events 300] [-seed 1]
//	                        [-store-faults] [-kill-receiver N] [-kill-sender N]
//	                        [-restart-redis N [-redis-aof]] [-stall-for 3s]
//	                        [-pg-terminate N] [-failover [-wait-replicas N]]
//	                        [-write-delay 0] [-attempts 4]
//	                        [-cut-for 400ms] [-updates K]
//	                        [-receivers N [-balance roundrobin|random]
//	                         [-rolling-restart] [-reshard]
//	                         [-kill-replica N [-kill-after-effect]]
//	                         [-effect-delay D]] [-stamp-events]
//
// Every event is one GeoJSON Feature with its own id and its own
// idempotency key. A seeded few are invalid (a Feature without "id": the
// receiver answers 422 and records that answer), and a seeded few are sent
// twice, by two senders at the same moment (the same key and payload: 409s
// and replays). A delivery that ends without success goes to an in-memory
// dead-letter sink. After the first pass the faults stop, every request the
// proxy held has landed, and every dead letter that did not fail
// permanently is re-driven with its own key and payload, as an operator
// would. Before that re-drive, every event a sender saw acknowledged (a
// 2xx answer, executed or replayed) must have its feature stored: one
// missing is "acknowledged, effect missing", and lost, whatever a re-send
// does later. Then every event is re-sent once more with its key and
// payload, as a sender replaying its whole journal would: each should be a
// replay, and a key whose record the key store lost runs its handler
// again. Then the receiver's run counts and feature store are checked.
//
// chaos -upstream [-events 200] [-seed 1] [-die-before 0.03] [-die-after 0.05]
// is the row of a receiver in another language: `geoidem proxy` in front
// of examples/aiohttp/receiver.py, which the harness kills in requests,
// before its work or after it and before its answer, and restarts on its
// port at once (upstream.go). It runs with the proxy holding an uncertain
// key (the default) and releasing it (-uncertain-hold 0), each before the
// receiver without and with --dedup (deduplicating by the forwarded
// Idempotency-Key), and counts from the receiver's durable runs file the
// events run twice and those lost, before and after an operator releases
// the held keys the receiver had not run.
//
// With -path-spellings the senders send each attempt of a delivery to
// another spelling of the path, /features, /%66eatures, /feature%73,
// /%66%65atures and /%66eature%73 in turn (starting at a place chosen by the
// key), as a proxy that re-encodes paths would: one resource, one key,
// several request targets. The in-process senders only (not -kill-sender).
//
// With -store-faults the key store fails under load as well: a loopback TCP
// proxy (internal/testkit Cutter) between the receiver and Redis or PostgreSQL
// resets every connection and refuses new ones for a few hundred
// milliseconds (-cut-for, longer than the receiver's 250 ms store timeout,
// shorter than the two tries the middleware gives a record write), twice,
// and with PostgreSQL the receiver's connections are
// also killed with pg_terminate_backend, three times. The middleware then
// answers 503 without running the handler (it fails closed) and the
// senders retry. With -kill-receiver N (PostgreSQL only: memory features
// die with the process) the receiver runs as a child process, this same
// program in a hidden -serve-receiver mode, and is killed with SIGKILL N
// times at seeded moments of the run and restarted on the same port.
//
// With -kill-sender N (memory, Redis or PostgreSQL; not combined with the
// store or receiver faults) it is the sender that crashes: the first pass
// runs in a child process, this same program in a hidden -run-sender mode,
// whose senders deliver through a client.Outbox with a FileJournal (each
// key and body written before the first attempt, synced while it runs).
// The child is killed with SIGKILL N times at seeded points of its
// journal and run again over the same events each time, then once to the
// end; a re-run sends what the journal holds, so the receiver replays what
// it executed.
// The table's attempt counts are then those of the last, complete run, and
// "journal pending" (entries never marked done) must be 0.
//
// With -restart-redis N the store is a redis-server the harness starts on
// a spare loopback port, without persistence (no RDB snapshot, no AOF),
// SIGKILLed N times at seeded points of the first pass and restarted empty
// at once on the same port (it needs redis-server on PATH). Every key
// completed before a restart is forgotten, so its re-send runs the handler
// again, and the run must FAIL on "events run twice" (the feature store has
// no idempotency of its own, so "features written twice" counts the same
// events), and on "acknowledged, effect missing": the features were in
// that Redis too. It shows that the run count sees what a lost record
// costs.
// With -redis-aof as well, that redis-server runs with appendonly yes and
// appendfsync always and restarts on its own files: every write it
// acknowledged survives, and the run should pass.
//
// -stall-for D stalls the path from the receiver to Redis or PostgreSQL
// once, at a seeded point of the first pass, for D (internal/testkit Cutter.Stall:
// connections stay open, nothing is forwarded or reset). -pg-terminate N
// kills the receiver's PostgreSQL connections with pg_terminate_backend N
// times at seeded points of the first pass, without the cuts of
// -store-faults. With -failover the store is a primary and a replica,
// redis-servers of the harness's own without persistence; at a seeded
// point of the first pass replication stalls for 1 s, the primary is
// SIGKILLed, the replica promoted (REPLICAOF NO ONE) and the receiver's
// path pointed at it (a testkit.Cutter in between, as a Sentinel switch
// would), and the old primary restarts empty as the new one's replica;
// -wait-replicas N sets the receiver's redisstore WaitReplicas, so that a
// claim counts only once N replicas hold it, and so does the feature write
// before its 201 (examples/ingest's feature store WAITs too): an
// acknowledged feature survives the failover. -write-delay D pauses every feature write for D, so that
// more handlers are running when a fault strikes. The bench's "store faults" section runs these.
//
// With -updates K every one of the -events features is observed K times,
// one second apart (observation_time), each observation its own delivery
// under its own key, sent in the order observed by the concurrent jittered
// senders through the proxy, whose faults reorder them; the dead letters
// are re-driven last. The receiver must keep the newest observation of
// each feature whatever the arrival order: the row "stale final state"
// counts the features that hold an older one, and must be 0 (updates.go).
//
// With -receivers N (N > 1; Redis or PostgreSQL: the memory key store is
// one process's memory, so N replicas would each run the same key once,
// and the flag is refused) the receiver is N processes, this same program
// in -serve-receiver mode, each on its own loopback port and all on one
// key store, behind a balancer of the harness's own (balancer.go;
// -balance roundrobin or random, seeded), the fault proxy in front of it.
// The runs reaching the write are summed over the replicas' run logs; the
// features are shared, in the PostGIS table or in Redis beside the keys,
// and their effects and writes read from there (replicas.go). After the
// first pass every replica is restarted (SIGTERM, started again), and
// every acknowledged event's feature must then answer GET /features/{id}
// through the balancer: "acknowledged, effect missing" counts those that
// do not. -rolling-restart SIGTERMs each replica in turn under load (it
// drains its requests), restarts it on its port and goes on once it
// answers /healthz; -kill-replica N SIGKILLs a replica N times, each once
// a handler run of its is in its write delay, and restarts it: its claims
// are taken over when their lease runs out. With -kill-after-effect each
// kill is aimed after a run's feature write took effect and before the
// middleware completed its key (the run log's last line records the
// effect), and -effect-delay D pauses every run there for D, widening that
// window: on Redis the retry of such a run runs it again. -reshard runs
// the replicas on a Redis Cluster of the harness's own (three masters with
// a replica each, internal/testkit's Cluster) and, at a third of the first
// pass, migrates the slots of every key under the run's prefix to the next
// master, one slot after another, with testkit's Cluster.MigrateSlot (which
// waits before each slot's last step until its target knows every
// master's configEpoch). -stamp-events gives each event's feature an
// observation_time of its own: a second run of an event is then stale to
// the feature store, and "features written twice" stays 0 however often
// it runs. docs/stores.md and docs/proof.md have the figures.
//
// Each run against Redis or PostgreSQL uses its own key prefix or tables,
// named with a random suffix, and removes them at the end. Every address is
// on loopback.
//
// # Reading the table
//
// The run prints one table. "attempts" counts every HTTP attempt the
// senders made; "replays" the answers that carried Idempotent-Replayed
// (work done before, answered from the record); "409s" the answers "still
// in flight"; "422s" the invalid events' answers, first or replayed.
// "dead-lettered" counts the deliveries of the first pass that ended
// without success (the invalid events among them, permanently), and
// "dead letters by last answer" splits the others by the last answer
// their sender got (a 409 is a key still in flight, blocked);
// "re-driven" those sent again afterwards; "re-sent" the events sent once
// more at the end, and how many of those answers were replays. The proxy's
// lines count the faults it injected; "store 503s" the requests the
// middleware refused because the key store was unreachable; "receiver
// kills" and "Redis restarts" the SIGKILLs.
//
// Then the receiver's run counts, per feature id, which the harness takes
// by wrapping the service's feature store (service.Config.WrapFeatures;
// runs.go). "runs reaching the write" counts the handler runs that reached
// the feature write, counted just before it: in process, or, for a
// receiver in a child process, in a run log file that keeps the lines of a
// killed child. "runs that took effect" counts the runs that had an
// effect: on PostgreSQL the committed ones, read from the writes column,
// which the write increments inside the handler's transaction, so an
// attempt rolled back (a killed connection or process) leaves no count and
// is not a second run; in memory mode the runs whose write the in-memory
// feature store took; in Redis mode the runs whose write Redis took,
// counted in the harness's process (with -receivers, the counters Redis
// keeps beside each feature). A write refused (a WaitReplicas not met, a
// store fault) is a run without effect.
//
// Before any re-send the receiver is redeployed: stopped gracefully and
// started again on the same store and port (-receivers: every replica;
// not on the memory store, which keeps nothing across a restart by
// design), and every acknowledged event's feature must then answer GET
// /features/{id}, and on Redis have its counters there: one that does not
// is "acknowledged, effect missing".
//
// The lines that matter are last: "events run twice", the events whose
// effect ran more than once; "features written
// twice", the feature ids written more than once (the in-memory write
// counters, or the writes column); and "events lost", the valid events
// whose feature is not stored after the re-drive, or whose feature was
// missing before it although a sender had been answered 2xx ("acknowledged,
// effect missing": a receiver that loses a record together with its effect
// would otherwise run the event again on the re-send and show only one
// replay fewer). The command exits 0 only if all of these are 0 (and
// "journal pending" too), 1 otherwise, and 2 on a usage error. A run that
// injected no faults proves nothing: check the fault lines too.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options is what the flags select, plus what only tests set.
type options struct {
	store        string
	senders      int
	events       int
	attempts     int
	seed         uint64
	storeFaults  bool
	killReceiver int
	killSender   int

	// naive replaces the receiver by a handler without the middleware,
	// which applies every delivery it gets: the harness must then fail.
	naive bool
	// forgetful replaces the receiver by one that acknowledges some events
	// and then loses their record and their effect together: the check
	// before the re-send must catch it.
	forgetful bool
	// pathSpellings sends each attempt of a delivery to another spelling
	// of the path (pathSpellings in spellings.go).
	pathSpellings bool
	cutFor        time.Duration
	// restartRedis is how many times the harness's own redis-server is
	// SIGKILLed and restarted empty.
	restartRedis int
	// redisAOF runs that redis-server with appendonly yes and appendfsync
	// always: a restart then reloads every acknowledged write.
	redisAOF bool
	// stallFor is how long the one store stall lasts (0: no stall).
	stallFor time.Duration
	// pgTerminate is how many extra pg_terminate_backend rounds hit the
	// receiver's PostgreSQL connections under load.
	pgTerminate int
	// failover runs the store as a primary and a replica of the harness's
	// own and fails over once under load; waitReplicas is the receiver's
	// redisstore Config.WaitReplicas.
	failover     bool
	waitReplicas int
	// writeDelay pauses each feature write before it commits (the run
	// counter's delay), so that more handlers are running when a store
	// fault strikes.
	writeDelay time.Duration
	// updates is how many observations of each feature an -updates run
	// delivers (0: the exactly-once run).
	updates int
	// receivers is how many receiver processes run behind the balancer
	// (1: the receiver in process, or the -kill-receiver child); balance
	// is the balancer's policy (replicas.go, balancer.go).
	receivers int
	balance   string
	// rollingRestart restarts every replica in turn, gracefully, under
	// load; killReplica is how many times a replica is SIGKILLed in a
	// handler run and restarted.
	rollingRestart bool
	killReplica    int
	// killAfterEffect aims the -kill-replica kills after a run's effect
	// and before its key's completion; effectDelay pauses each replica's
	// run there (the window, widened).
	killAfterEffect bool
	effectDelay     time.Duration
	// reshard runs the replicas on a Redis Cluster of the harness's own
	// (three masters with a replica each) and migrates the slots of the
	// run's live keys under load, with testkit's Cluster.MigrateSlot.
	reshard bool
	// stamp gives each event's feature an observation_time of its own, so
	// that a second run of an event is stale: an effect idempotent by the
	// event.
	stamp bool
	// features, when set, is the in-process receiver's feature store in
	// place of the service's (tests only), called at each start: a feature
	// store that does not outlive the process, which the check after the
	// redeploy must catch.
	features func() service.FeatureStore
	// splitKeys gives each replica a key prefix of its own (tests only):
	// replicas that do not share their keys, as on the memory store, which
	// the harness must see run events twice.
	splitKeys bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "-serve-receiver" {
		return serveReceiver(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "-run-sender" {
		return runSenderChild(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "-upstream" {
		return upstreamChaos(ctx, args[1:], stdout, stderr) // upstream.go
	}
	fl := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: chaos [-store memory|redis://…|postgres://…] [-senders 4] [-events 300] [-seed 1] [-store-faults] [-kill-receiver N] [-kill-sender N] [-restart-redis N [-redis-aof]] [-stall-for D] [-pg-terminate N] [-failover [-wait-replicas N]] [-receivers N [-balance roundrobin|random] [-rolling-restart] [-kill-replica N [-kill-after-effect] [-effect-delay D]] [-reshard]] [-stamp-events]")
		fl.PrintDefaults()
	}
	var o options
	fl.StringVar(&o.store, "store", "memory", "key store and feature store: memory, redis://host:port/db or postgres://… (loopback only)")
	fl.IntVar(&o.senders, "senders", 4, "concurrent senders")
	fl.IntVar(&o.events, "events", 300, "events to deliver")
	fl.IntVar(&o.attempts, "attempts", 4, "attempts per delivery before it is dead-lettered")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the events, the proxy's faults, the senders' jitter and the store faults")
	fl.BoolVar(&o.storeFaults, "store-faults", false, "also cut the receiver's connections to Redis or PostgreSQL under load (and, for PostgreSQL, pg_terminate_backend them)")
	fl.DurationVar(&o.cutFor, "cut-for", cutFor, "with -store-faults: how long each cut of the store lasts")
	fl.IntVar(&o.killReceiver, "kill-receiver", 0, "run the receiver as a child process and SIGKILL and restart it this many times (PostgreSQL only)")
	fl.IntVar(&o.killSender, "kill-sender", 0, "run the senders, journaled, in a child process and SIGKILL and re-run it this many times")
	fl.IntVar(&o.restartRedis, "restart-redis", 0, "start a redis-server without persistence as the store, and SIGKILL it and restart it empty this many times (the run then FAILs: completed keys run again)")
	fl.BoolVar(&o.redisAOF, "redis-aof", false, "with -restart-redis: run that redis-server with appendonly yes and appendfsync always, so that a restart keeps every acknowledged write")
	fl.DurationVar(&o.stallFor, "stall-for", 0, "stall the receiver's connections to Redis or PostgreSQL once, under load, for this long (nothing forwarded, nothing reset)")
	fl.IntVar(&o.pgTerminate, "pg-terminate", 0, "kill the receiver's PostgreSQL connections with pg_terminate_backend this many times under load (PostgreSQL only; -store-faults adds 3 of its own)")
	fl.BoolVar(&o.failover, "failover", false, "start a redis-server primary and replica of its own; under load, stall replication for 1 s, SIGKILL the primary, promote the replica and point the receiver at it")
	fl.IntVar(&o.waitReplicas, "wait-replicas", 0, "the receiver's redisstore WaitReplicas: replicas that must acknowledge each claim (Redis only)")
	fl.IntVar(&o.updates, "updates", 0, "observe every feature this many times, deliver the observations concurrently through the proxy, and check that each feature ends with its newest (the \"stale final state\" row)")
	fl.DurationVar(&o.writeDelay, "write-delay", 0, "pause each feature write this long, so that more handlers are running when a store fault strikes")
	fl.IntVar(&o.receivers, "receivers", 1, "receiver processes behind a balancer of the harness's own, on one key store (Redis or PostgreSQL when more than 1)")
	fl.StringVar(&o.balance, "balance", balanceRoundRobin, "with -receivers: how the balancer spreads the attempts, roundrobin or random (seeded)")
	fl.BoolVar(&o.rollingRestart, "rolling-restart", false, "with -receivers: under load, SIGTERM each replica in turn (it drains), restart it on its port, and go on once it serves /healthz")
	fl.IntVar(&o.killReplica, "kill-replica", 0, "with -receivers: SIGKILL a replica in a handler run this many times under load, and restart it")
	fl.BoolVar(&o.killAfterEffect, "kill-after-effect", false, "with -kill-replica: aim each SIGKILL after a handler run's feature write took effect and before its key's completion, not inside the write")
	fl.DurationVar(&o.effectDelay, "effect-delay", 0, "with -receivers: pause each handler run this long after its feature write took effect, before the middleware completes its key (widens the window -kill-after-effect aims at)")
	fl.BoolVar(&o.reshard, "reshard", false, "with -receivers: start a Redis Cluster of its own (three masters with a replica each) and, under load, migrate the slots of the run's live keys to other masters")
	fl.BoolVar(&o.stamp, "stamp-events", false, "give each event's feature an observation_time of its own, so that a second run of an event is stale and writes nothing (an effect idempotent by the event)")
	fl.BoolVar(&o.pathSpellings, "path-spellings", false, "send each attempt of a delivery to another spelling of its path (/features, /%66eatures, /feature%73, …)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "chaos: unexpected arguments %q\n", fl.Args())
		return 2
	}
	if err := errors.Join(o.check(), o.checkUpdates(), o.checkReplicas()); err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 2
	}
	if o.updates > 0 {
		return updatesChaos(ctx, o, stdout, stderr)
	}
	return chaos(ctx, o, stdout, stderr)
}

// storeKind is what a -store value names.
type storeKind int

const (
	memoryStore storeKind = iota
	redisStore
	postgresStore
)

func (o options) kind() storeKind {
	switch {
	case strings.HasPrefix(o.store, "redis://"):
		return redisStore
	case strings.HasPrefix(o.store, "postgres://"), strings.HasPrefix(o.store, "postgresql://"):
		return postgresStore
	}
	return memoryStore
}

// Bounds on the flags, so that a typo cannot start a run of hours.
const (
	maxSenders  = 64
	maxEvents   = 100_000
	maxAttempts = 50
	maxKills    = 50
)

func (o options) check() error {
	switch {
	case o.senders < 1 || o.senders > maxSenders:
		return fmt.Errorf("-senders %d: want 1 to %d", o.senders, maxSenders)
	case o.events < 1 || o.events > maxEvents:
		return fmt.Errorf("-events %d: want 1 to %d", o.events, maxEvents)
	case o.attempts < 1 || o.attempts > maxAttempts:
		return fmt.Errorf("-attempts %d: want 1 to %d", o.attempts, maxAttempts)
	case o.cutFor < 0 || o.cutFor > time.Minute:
		return fmt.Errorf("-cut-for %v: want 0 to 1m", o.cutFor)
	case o.killReceiver < 0 || o.killReceiver > maxKills:
		return fmt.Errorf("-kill-receiver %d: want 0 to %d", o.killReceiver, maxKills)
	case o.killSender < 0 || o.killSender > maxKills:
		return fmt.Errorf("-kill-sender %d: want 0 to %d", o.killSender, maxKills)
	case o.killSender > 0 && (o.storeFaults || o.killReceiver > 0 || o.naive || o.pathSpellings):
		return errors.New("-kill-sender runs alone: not with -store-faults, -kill-receiver, -path-spellings or the naive receiver")
	case o.restartRedis < 0 || o.restartRedis > maxKills:
		return fmt.Errorf("-restart-redis %d: want 0 to %d", o.restartRedis, maxKills)
	case o.restartRedis > 0 && (o.store != "memory" && o.store != "" || o.storeFaults || o.killReceiver > 0 || o.killSender > 0 || o.naive):
		return errors.New("-restart-redis runs alone, on a redis-server of its own: not with -store, -store-faults, -kill-receiver or -kill-sender")
	case o.redisAOF && o.restartRedis == 0:
		return errors.New("-redis-aof configures the redis-server of -restart-redis")
	case o.stallFor < 0 || o.stallFor > time.Minute:
		return fmt.Errorf("-stall-for %v: want 0 to 1m", o.stallFor)
	case o.failover && (o.store != "memory" && o.store != "" || o.storeFaults || o.killReceiver > 0 || o.killSender > 0 || o.naive || o.restartRedis > 0 || o.stallFor > 0):
		return errors.New("-failover runs alone, on redis-servers of its own: not with -store, -store-faults, -kill-receiver, -kill-sender, -restart-redis or -stall-for")
	case o.waitReplicas < 0 || o.waitReplicas > 5:
		return fmt.Errorf("-wait-replicas %d: want 0 to 5", o.waitReplicas)
	case o.waitReplicas > 0 && !o.failover && !strings.HasPrefix(o.store, "redis://"):
		return errors.New("-wait-replicas needs -failover or -store redis://…")
	case o.writeDelay < 0 || o.writeDelay > 5*time.Second:
		return fmt.Errorf("-write-delay %v: want 0 to 5s", o.writeDelay)
	case o.pgTerminate < 0 || o.pgTerminate > maxKills:
		return fmt.Errorf("-pg-terminate %d: want 0 to %d", o.pgTerminate, maxKills)
	case (o.stallFor > 0 || o.pgTerminate > 0) && o.killSender > 0:
		return errors.New("-kill-sender runs alone: not with -stall-for or -pg-terminate")
	}
	kind := o.kind()
	if kind == memoryStore && o.store != "memory" && o.store != "" {
		return fmt.Errorf("-store %q: want memory, redis://host:port/db or postgres://…", o.store)
	}
	if kind == memoryStore && (o.storeFaults || o.stallFor > 0) {
		return errors.New("-store-faults and -stall-for need -store redis://… or postgres://…: the memory store cannot fail")
	}
	if o.pgTerminate > 0 && kind != postgresStore {
		return errors.New("-pg-terminate needs -store postgres://…")
	}
	if o.killReceiver > 0 && kind != postgresStore {
		return errors.New("-kill-receiver needs -store postgres://…: features kept in the receiver's memory die with it")
	}
	if o.naive && (kind != memoryStore || o.killReceiver > 0) {
		return errors.New("the naive receiver runs only in process, on memory")
	}
	if kind == memoryStore {
		return nil
	}
	u, err := url.Parse(o.store)
	if err != nil {
		return fmt.Errorf("-store: %w", err)
	}
	nodes := strings.Split(u.Host, ",")
	if len(nodes) > 1 && (kind != redisStore || o.storeFaults || o.stallFor > 0 || o.waitReplicas > 0) {
		return errors.New("-store: a list of nodes is a Redis Cluster, which runs without -store-faults, -stall-for and -wait-replicas (one cut proxy cannot stand for a cluster's nodes)")
	}
	for _, node := range nodes {
		host, port, err := net.SplitHostPort(node)
		if err != nil || port == "" {
			return fmt.Errorf("-store: %q: the URL needs an explicit port", node)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("-store: host %q is not on loopback; chaos only breaks loopback services", host)
		}
	}
	return nil
}

// Timing of a run: short enough for a CI run of seconds, with every
// relation the faults need (a held request outlives the sender's attempt
// timeout; a lease is short, so a crashed owner's claim is taken over soon).
const (
	lease          = time.Second
	attemptTimeout = 500 * time.Millisecond
	delayFor       = 800 * time.Millisecond
	deliveryLimit  = 30 * time.Second
	maxRetryAfter  = 200 * time.Millisecond
	storeTimeout   = 250 * time.Millisecond
	cutFor         = 400 * time.Millisecond
)
