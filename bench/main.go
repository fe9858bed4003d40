// Command bench measures geoidem against the baselines that matter, in one
// run on one machine, and writes bench/REPORT.md with its SVG figures.
//
//	go run ./bench [-quick] [-out bench] [-only http,storm,validate,occ,outage,hostile,faults,journal,frontdoor,retention,clustered|goals]
//
// Sections:
//
//  1. http: the middleware's cost over loopback HTTP, bare handler against
//     memstore, redisstore and pgstore, and against hand-written handlers
//     that make the same Redis and PostgreSQL round trips themselves;
//  2. storm: 1,000 concurrent requests with one key;
//  3. validate: package geojson against go-geom and simplefeatures;
//  4. occ: the AWS Architecture Blog's optimistic-concurrency retry
//     simulation, driven by package client's backoff code;
//  5. outage: webhook senders against a receiver that is down for 30 s;
//  6. hostile: the hostile inputs against benign ones of the
//     same size, time and allocation per byte;
//  7. faults: handler runs per event and dead letters under faults of the
//     key store: a Redis restart without persistence and with
//     AOF, a Redis stall, a failover with and without WaitReplicas,
//     pg_terminate_backend under load; each row a run
//     of examples/chaos (which it builds), quoting its command;
//  8. journal: serial deliveries through an Outbox with a FileJournal
//     against a raw write-and-fsync loop in the same directory;
//  9. frontdoor: slow bodies and idle connections from many loopback
//     addresses against a service without a front door and behind package
//     frontdoor, each service in a child process.
//  10. retention: pgstore and redisstore (on Redis and on Valkey) filled to
//     -retention-keys keys (10 M; -quick 1 M), their size or memory per
//     key, Claim and Complete latency at that size against an empty store,
//     and the CPU PostgreSQL spends pruning by DELETE and VACUUM, projected
//     to 432 M keys (5,000 first calls/s kept 24 h).
//  11. clustered: deliveries through two receivers sharing one store while
//     its topology changes: Redis
//     Cluster slots migrated, a master failed over (CLUSTER FAILOVER, and
//     SIGKILL) with WaitReplicas 0 and 1, a PostgreSQL standby promoted
//     (async and sync); handler runs per key, records lost, dead letters.
//
// Under the summary, the goals section puts every figure of the goal table
// that the run measured (sections 1, 3 and 8) next to its goal; -only goals
// runs just those sections.
//
// Sections 1, 2 and 7 need Redis on 127.0.0.1:6379 and PostgreSQL at
// postgres://postgres@127.0.0.1:5432/test (see -redis and -postgres); a
// service that cannot be reached fails the run. Section 10 needs the
// PostgreSQL, and redis-server and valkey-server on PATH (it starts private
// ones: filled, they hold gigabytes). Section 11 needs redis-server,
// redis-cli and PostgreSQL 15's programs (it starts a private Redis
// Cluster and private PostgreSQL servers). Sections 4 and 5 are pure
// simulations in virtual time, deterministic for a -seed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
)

// options are the knobs of one run. main fills them from the flags; the
// test fills them directly, with even smaller sizes than -quick.
type options struct {
	out     string          // directory for REPORT.md and the figures
	quick   bool            // -quick: smaller sizes
	only    map[string]bool // sections to run; empty: all
	seed    uint64          // seed of the simulations
	command string          // the command line, quoted in the report
	log     io.Writer       // progress messages

	redisAddr   string
	postgresURL string

	// Section 1.
	httpRequests     int           // request bound of each measurement at 1 client
	httpManyRequests int           // the same at more clients
	httpTime         time.Duration // time bound of each measurement
	httpRounds       int           // the bounds are split over this many interleaved rounds
	clients          []int         // concurrent clients

	// Section 2.
	stormRequests int
	stormWork     time.Duration // how long the storm's handler works

	// Section 3.
	vertices []int
	valTime  time.Duration // time bound of each validation measurement

	// Section 4.
	occClients []int
	occTrials  int

	// Section 5.
	outageEvents   int
	outageCapacity int           // requests/s once the receiver is back
	outageDown     time.Duration // how long the receiver is down
	outageSpread   time.Duration // first attempts are spread over this

	// Section 6 (its time bound is valTime).
	hostileBody   int   // size of the problem-document body
	hostileHoles  []int // hole counts
	hostileCircle int   // vertices of the tiny circle

	// Section 7.
	faultEvents     int           // events of each chaos run
	faultSenders    int           // its concurrent senders
	faultWriteDelay time.Duration // its pause before each feature write
	faultStall      time.Duration // how long the Redis stall lasts
	faultPGKills    int           // pg_terminate_backend rounds

	// Section 8.
	journalDir    string        // directory of the journal and the fsync loop ("": the system's temporary directory)
	journalOps    int           // operation bound of each measurement
	journalTime   time.Duration // time bound of each measurement
	journalRounds int           // interleaved rounds

	// Section 9.
	fdIdleConns int           // idle connections the attackers hold
	fdSlowFor   time.Duration // how long the sender posts under slow bodies

	// Section 10.
	retentionKeys    int // keys each store is filled with
	retentionExpired int // of them, expired ones that PostgreSQL's Prune deletes
	retentionCalls   int // Claim and Complete calls timed per store and size

	// Section 11.
	topoEvents  int           // events of each run
	topoSenders int           // concurrent senders
	topoSeeds   int           // runs of each row, with seeds seed, seed+1, …
	topoSpan    time.Duration // the first attempts are spread over this
	// The receivers' go-redis ClusterStateReloadInterval (0: go-redis's
	// default). A connection refused by a dead master does not make
	// go-redis reload the slot map (only MOVED and ASK do), so until the
	// periodic reload the killed master's slots go to its dead address.
	topoReload time.Duration

	// Section 12.
	proxyRequests [2]int // requests a round, at 1 client and at 64
	proxyRounds   int    // interleaved rounds
}

// sectionNames are the -only names, in report order; the section numbers
// are accepted as well.
var sectionNames = []string{"http", "storm", "validate", "occ", "outage", "hostile", "faults", "journal", "frontdoor", "retention", "clustered", "proxy"}

// goalSections are the sections -only goals stands for: those that measure
// the figures of the performance goals.
var goalSections = []string{"http", "validate", "journal"}

func defaultOptions(quick bool) options {
	o := options{
		out:         "bench",
		quick:       quick,
		seed:        1,
		log:         os.Stderr,
		redisAddr:   "127.0.0.1:6379",
		postgresURL: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		// 4 rounds: every memory-store slot in every position once
		// (roundOrder); 20,000 requests a round at many clients.
		httpRequests:     20000,
		httpManyRequests: 80000,
		httpTime:         3 * time.Second,
		httpRounds:       4,
		clients:          []int{1, 64},
		stormRequests:    1000,
		stormWork:        20 * time.Millisecond,
		vertices:         []int{100, 10_000, 100_000},
		valTime:          400 * time.Millisecond,
		occClients:       steps(10, 190, 10),
		occTrials:        100,
		outageEvents:     1000,
		outageCapacity:   100,
		outageDown:       30 * time.Second,
		outageSpread:     time.Second,
		hostileBody:      1 << 20,
		hostileHoles:     []int{20_000, 50_000},
		hostileCircle:    21_000,

		faultEvents:     2000,
		faultSenders:    16,
		faultWriteDelay: 20 * time.Millisecond,
		faultStall:      3 * time.Second,
		faultPGKills:    20,

		journalOps:    5000,
		journalTime:   2 * time.Second,
		journalRounds: 5,

		fdIdleConns:      20_000,
		fdSlowFor:        20 * time.Second,
		retentionKeys:    10_000_000,
		retentionExpired: 1_000_000,
		retentionCalls:   20_000,
		topoEvents:       600,
		topoSenders:      16,
		topoSeeds:        2,
		topoSpan:         6 * time.Second,
		topoReload:       2 * time.Second,

		proxyRequests: [2]int{400, 4000},
		proxyRounds:   3,
	}
	if quick {
		o.httpRequests, o.httpManyRequests, o.httpTime, o.httpRounds = 2000, 2000, 600*time.Millisecond, 4
		o.valTime = 50 * time.Millisecond
		o.occClients = []int{10, 50, 100, 190}
		o.occTrials = 20
		o.faultEvents = 500
		o.journalTime, o.journalRounds = 300*time.Millisecond, 3
		o.fdIdleConns, o.fdSlowFor = 4000, 8*time.Second
		o.retentionKeys, o.retentionExpired, o.retentionCalls = 1_000_000, 100_000, 5000
		o.topoEvents, o.topoSpan = 300, 5*time.Second
		o.proxyRequests, o.proxyRounds = [2]int{150, 1500}, 2
	}
	return o
}

func steps(from, to, step int) []int {
	var s []int
	for n := from; n <= to; n += step {
		s = append(s, n)
	}
	return s
}

func (o *options) wants(section string) bool { return len(o.only) == 0 || o.only[section] }

func (o *options) logf(format string, args ...any) {
	if o.log != nil {
		fmt.Fprintf(o.log, "bench: "+format+"\n", args...)
	}
}

func parseOnly(s string) (map[string]bool, error) {
	only := map[string]bool{}
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		if f == "" {
			continue
		}
		if f == "goals" {
			for _, name := range goalSections {
				only[name] = true
			}
			continue
		}
		known := false
		for i, name := range sectionNames {
			if f == name || f == fmt.Sprint(i+1) {
				only[name], known = true, true
			}
		}
		if !known {
			return nil, fmt.Errorf("unknown section %q (want %s, goals, or 1 to %d)", f, strings.Join(sectionNames, ", "), len(sectionNames))
		}
	}
	return only, nil
}

func main() {
	if code, ok := frontdoorChild(); ok {
		os.Exit(code) // a service or an attacker of section 9 (the front door)
	}
	if code, ok := reverseProxyChild(); ok {
		os.Exit(code) // the ReverseProxy of section 12 (proxy)
	}
	quick := flag.Bool("quick", false, "smaller sizes, for a quick look")
	out := flag.String("out", "bench", "directory for REPORT.md and its figures")
	only := flag.String("only", "", "comma-separated sections to run: "+strings.Join(sectionNames, ",")+" (or 1-12), or goals (= "+strings.Join(goalSections, ",")+"); default all")
	seed := flag.Uint64("seed", 1, "seed of the simulations (sections occ and outage)")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	pgURL := flag.String("postgres", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL connection string")
	journalDir := flag.String("journal-dir", "", "directory on the disk section journal measures (default: the system's temporary directory)")
	retentionKeys := flag.Int("retention-keys", 0, "keys each store is filled with in section retention (default 10,000,000; -quick 1,000,000); a tenth of them are expired rows that Prune deletes")
	topoSpan := flag.Duration("clustered-span", -1, "section clustered: spread the events' first attempts over this (default 6 s; -quick 5 s; 0: all at once)")
	topoReload := flag.Duration("clustered-reload", 2*time.Second, "section clustered: the receivers' go-redis ClusterStateReloadInterval (0: go-redis's default, 60 s)")
	flag.Parse()

	o := defaultOptions(*quick)
	if *retentionKeys > 0 {
		o.retentionKeys, o.retentionExpired = *retentionKeys, max(1, *retentionKeys/10)
	}
	o.topoReload = *topoReload
	if *topoSpan >= 0 {
		o.topoSpan = *topoSpan
	}
	o.out, o.seed, o.redisAddr, o.postgresURL, o.journalDir = *out, *seed, *redisAddr, *pgURL, *journalDir
	var err error
	if o.only, err = parseOnly(*only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	o.command = strings.TrimSpace("go run ./bench " + strings.Join(os.Args[1:], " "))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, &o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	o.logf("wrote %s", rep.path)
	if len(rep.failed) > 0 {
		fmt.Fprintf(os.Stderr, "bench: sections failed: %s\n", strings.Join(rep.failed, ", "))
		os.Exit(1)
	}
}
