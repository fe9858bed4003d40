// Command ingest is a receiving service to copy: GeoJSON features posted
// with an Idempotency-Key are stored exactly once, the newest observation
// of each feature kept, and every retry is answered with the first
// response. It uses geoidem's public packages only; the service itself
// (stores, handler, wiring) is in ./service, the flags, the listener and
// the shutdown here.
//
//	go run ./examples/ingest [-addr 127.0.0.1:8080] [-store memory|redis://…|postgres://…]
//	                         [-webhook-secret whsec_…] [-webhook-public-key whpk_…] [-retention 24h]
//	                         [-max-in-flight 64] [-max-in-flight-bytes 16777216] [-min-body-rate 1024]
//	                         [-max-conns 1024] [-max-conns-per-host 8] [-max-idle-conns 256] [-known-senders CIDR,…]
//	                         [-trusted-proxies CIDR,…] [-forwarded-header X-Forwarded-For]
//	                         [-max-keys 140000] [-evict-after 1h] [-client-keys N] [-client-window D]
//	                         [-redis-max-memory BYTES] [-pg-max-keys 10000000]
//	                         [-order-property observation_time] [-max-observation-skew 5m]
//	                         [-admin-addr 127.0.0.1:9090]
//
// With -store redis://host:port/db the keys and the features live in Redis,
// so that both survive a restart of the service (a comma-separated
// list of nodes, redis://h1:p1,h2:p2,h3:p3, selects the Cluster client); the
// service refuses to start on a Redis it cannot use (nothing listening, a
// database it does not have, credentials it refuses), and on a Redis that
// keeps nothing across a restart (no AOF, no RDB save points) unless
// -redis-volatile accepts it (see redisstore.Durability). With
// -store postgres://… keys and features live in PostgreSQL, and each
// feature upsert into the PostGIS table commits in the same transaction as
// its key's completion: each geometry goes to PostGIS as EWKB (2D, 3D and
// mixed collections, SRID 4326) and each feature's bytes are kept exactly
// as received. In the memory mode the features live in process,
// bounded by -max-features and -max-feature-bytes: when full, a write is
// answered 507 feature-store-full (no Retry-After: no room frees by
// itself), and nothing stored is evicted. The front door
// (frontdoor.New) admits work, not waiting: a POST body is read in full,
// within -max-in-flight-bytes (16 MiB by default, by Content-Length) and
// at -min-body-rate (1 KiB/s after a 5 s grace, else 408 body-too-slow
// with Retry-After), before the request takes one of -max-in-flight work
// slots (64); an address is kept to a quarter of either once three
// quarters are held. A request that finds no room waits up to 5 s for it,
// then is answered 503 server-busy, or 429 client-busy, with a
// Retry-After that says when room frees; a body that finds the bytes full
// makes room by cutting off (408) the slowest body still arriving of an
// address with more arriving than its own. The answer is written after
// the slot is given back, and a client that reads it slower than 1 KiB/s
// after 5 s has its connection closed; an answer that does not need the
// body (a refusal, /healthz) is not held waiting for it. Senders in
// -known-senders (CIDRs), and senders whose webhook signature verified,
// are never cut off and have a quarter of the slots and bytes reserved;
// a junk signature earns nothing. Without webhook keys, the key store bounds each
// address's new keys, so that a few addresses cannot fill it: in memory
// mode a lone sender may use all of -max-keys but a quarter, and once only
// that quarter is free an address gets -client-keys new keys per
// -client-window (64 a minute by default); on Redis and PostgreSQL an
// address gets -client-keys new keys per -client-window at all times
// (50,000 an hour by default). Past it, a new key is answered 429
// client-full with a Retry-After, when the address's window ends; replays
// are never refused. What all clients together hold is bounded too: on Redis, new
// keys are refused 503 store-full once the server's memory reaches
// -redis-max-memory (by default nine tenths of its maxmemory; with no
// maxmemory, no bound, said at start), on PostgreSQL once the key table
// holds -pg-max-keys rows (ten million by default), each with a
// Retry-After that says when the earliest key ends; replays are still
// answered. When the memory store is full, completed records older than
// -evict-after (an hour) make room for new keys, oldest first, counted in
// /metrics (geoidem_store_evicted_total) and logged; a retry of an evicted
// record's request runs again. Below the requests, the connections are
// bounded (frontdoor.Config.MaxConns): -max-conns in all, -max-idle-conns waiting for
// a request; no connection is refused below -max-conns, and at it a new one
// takes the place of an idle one, then of a busy one (its body still
// arriving) of the address holding the most, never of one whose request
// has arrived whole; an address holding -max-conns-per-host is then
// reset. Behind reverse proxies, name them with -trusted-proxies: each
// request's client is then the address they forward (-forwarded-header),
// for every bound on clients.
//
// With -webhook-secret (v1, whsec_…) or -webhook-public-key (v1a, whpk_…),
// each repeatable for a rotation, the service accepts only Standard
// Webhooks signed with one of them, and the key is the webhook-id. A
// request whose headers cannot be a signed message (no signature, a
// timestamp out of tolerance, a URL with a query) is answered 401 (or 400)
// in front of admission, so unsigned traffic costs only its rejection;
// the signature is verified over the body behind admission, before the key
// is claimed, so a forgery claims nothing.
//
// A recorded answer is kept -retention long for the retries of its sender:
// by default 30 h with a webhook key, over Svix's 27.6 h retry schedule,
// and 24 h without. Size it to the longest retry schedule among your
// senders, from the first attempt to the last, plus one attempt's
// timeout: a record dropped before the sender's last retry lets that
// retry run the handler again.
//
// Endpoints:
//
//	POST /features        a Feature or FeatureCollection (application/geo+json
//	                      or application/json, else 415 before the claim, so
//	                      a corrected retry runs), Idempotency-Key required;
//	                      validated as RFC 7946 GeoJSON after the claim (422
//	                      with a JSON pointer per problem) and parsed only
//	                      then: the handler stores what the validator decoded.
//	                      Upserts the features by id (exactly as written, "ID"
//	                      is not "id"), the newest observation of an id kept
//	                      (-order-property, default observation_time, RFC 3339,
//	                      at most -max-observation-skew ahead of the service's
//	                      clock, else 503 with a pointer and Retry-After
//	                      when the clock will have caught up), and answers 201
//	                      {"stored":[ids…]}, with "stale":[ids…] (a newer
//	                      observation is stored) and "unstamped":[ids…] (no
//	                      time, and one with a time is stored) for those that
//	                      changed nothing: 200 when none was stored. A store
//	                      error that is the features' own fault is 422
//	                      (recorded); any other, known or not, 503 with
//	                      Retry-After (the key released).
//	GET  /features/{id}   a stored feature, byte for byte as posted
//	GET  /metrics         outcome counters, store latency histograms, lease
//	                      takeovers, the features written, stale and
//	                      unstamped, and the front door's decisions
//	                      (geoidem_frontdoor_*: connections refused or
//	                      closed, bodies cut, refusals, slots held), in
//	                      Prometheus text format
//	GET  /healthz         200 when the key store answers, 503 when it does not
//
// Every refusal (400, 413, 415, 422, 429, 503) is logged as a warning,
// without -v: "request refused" with the method, the path, the client's
// address and identity, the Idempotency-Key (webhook-id with webhook keys),
// the status and the problem type; at most 10 a minute, the rest counted
// in the next record's "suppressed". -v logs every outcome.
//
// With -admin-addr it also serves its key store's admin API
// (keystore/adminhttp) on that loopback address, for `geoidem keys -store
// http://ADDR`; a non-loopback address is refused.
//
// It prints the URL it serves and shuts down gracefully on SIGINT or SIGTERM:
// it waits up to -shutdown-timeout (by default the lease plus the store's
// lease, enough for every record retried in the background) and, when a
// record or release was given up (then, or earlier in a store outage
// longer than the lease), says how many and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/internal/clientaddr"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/standardwebhooks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses the flags and serves until ctx ends; it returns the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, code := parseFlags(args, stderr)
	if cfg == nil {
		return code
	}
	return serve(ctx, cfg, stdout, stderr)
}

// config is what the flags say.
type config struct {
	addr            string
	admin           adminFlag
	shutdownTimeout time.Duration
	verbose         bool
	service         service.Config
}

// volatileMeaning says what -redis-volatile accepts.
const volatileMeaning = "a Redis restart then loses every completed record and every claim in flight, so every retry that arrives after it runs its handler again"

// parseFlags returns the configuration args give, or nil and the exit
// status of a usage error.
func parseFlags(args []string, stderr io.Writer) (*config, int) {
	fl := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cfg := &config{admin: newAdminFlag(fl)}
	sc := &cfg.service
	fl.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address")
	fl.StringVar(&sc.Store, "store", "memory", "key store: memory, redis://host:port/db, redis://h1:p1,h2:p2 (Cluster) or postgres://…")
	fl.DurationVar(&sc.Lease, "lease", middleware.DefaultLease, "how long a claim holds its key without renewal")
	fl.DurationVar(&sc.Retention, "retention", 0, "how long a recorded answer is kept for the sender's retries: the longest retry schedule among your senders, from the first attempt to the last, plus an attempt's timeout (default 30h with -webhook-secret or -webhook-public-key, over Svix's 27.6 h schedule; 24h without)")
	fl.DurationVar(&sc.HandlerTimeout, "handler-timeout", 0, "cancel and roll back a feature write still running after this long, answered 503 and its key released (default 0: a write runs to its end, bounded by the lease)")
	fl.Int64Var(&sc.MaxBodyBytes, "max-body", middleware.DefaultMaxBodyBytes, "largest request body, in bytes")
	fl.StringVar(&sc.KeyTable, "pg-key-table", pgstore.DefaultTable, "PostgreSQL: the key store's table")
	fl.StringVar(&sc.FeaturesTable, "pg-features-table", service.DefaultFeaturesTable, "PostgreSQL: the PostGIS feature table")
	fl.StringVar(&sc.RedisPrefix, "redis-prefix", redisstore.DefaultKeyPrefix, "Redis: the key prefix")
	fl.IntVar(&sc.MaxFeatures, "max-features", service.DefaultMaxFeatures, "memory mode: most features kept in process")
	fl.Int64Var(&sc.MaxFeatureBytes, "max-feature-bytes", service.DefaultMaxFeatureBytes, "memory mode: most bytes of features kept in process")
	fl.StringVar(&sc.OrderProperty, "order-property", service.DefaultOrderProperty, "the feature property (RFC 3339) by which the newest update of an id wins; an update without it never replaces one with it")
	fl.DurationVar(&sc.MaxObservationSkew, "max-observation-skew", 0, "refuse (503 observation-time-ahead, Retry-After when the clock has caught up) an observation time further ahead of this service's clock than this: it would pin its feature until the clock passes it; 0: newest's default, 5m")
	fl.IntVar(&sc.MaxInFlight, "max-in-flight", 0, "most POST requests whose handlers run at once (work slots, taken once the body has arrived), a client (remote address) kept to a quarter once three quarters are held; none free within 5 s: 503 server-busy or 429 client-busy; negative: no bound; 0: the door's default, 64")
	fl.Int64Var(&sc.MaxInFlightBytes, "max-in-flight-bytes", 0, "most POST body bytes arriving or in work at once (by Content-Length), large bodies three quarters, a client a quarter once three quarters are held; negative: no bound; 0: the door's default, 16 MiB")
	fl.IntVar(&sc.MaxKeys, "max-keys", service.DefaultMaxKeys, "memory mode: most keys held; a lone sender may use all but a quarter, kept free for other senders")
	fl.DurationVar(&sc.EvictAfter, "evict-after", 0, "memory mode: when -max-keys are held, completed records older than this make room for new keys, oldest first (a retry of their requests then runs again; counted in /metrics as geoidem_store_evicted_total, and logged); 0: the store's default, 1h; negative: never, and a full store refuses new keys 503 until records reach the end of -retention")
	fl.IntVar(&sc.ClientKeys, "client-keys", 0, "without webhook keys: most new keys one address (an IPv6 /64) may claim in -client-window, past it 429 client-full with Retry-After; in memory mode only once the last quarter of -max-keys is reached; size it over your busiest sender's; 0: the store's default (memory 64, fewer under 4096 -max-keys; Redis and PostgreSQL 50000); negative: no bound")
	fl.Int64Var(&sc.RedisMaxMemory, "redis-max-memory", 0, "Redis: the server's used_memory, in bytes, at which new keys are refused 503 store-full (Retry-After: when the store's earliest key ends), all clients together, replays still answered; 0 (default): nine tenths of the server's maxmemory, or no bound, said in the log, when it sets none; negative: no bound")
	fl.Int64Var(&sc.PGMaxKeys, "pg-max-keys", service.DefaultPGMaxKeys, "PostgreSQL: the rows of the key table at which new keys are refused 503 store-full (Retry-After: when the earliest row can be pruned), all clients together, replays still answered; size it to the disk; negative: no bound")
	fl.DurationVar(&sc.ClientWindow, "client-window", 0, "the window of -client-keys, starting with an address's first counted new key; 0: the store's default (memory 1m, Redis and PostgreSQL 1h)")
	fl.Int64Var(&sc.MinBodyRate, "min-body-rate", 0, "least rate, in bytes a second, at which a POST body must arrive after a 5 s grace, else 408 body-too-slow and its bytes freed; negative: no bound (the 30 s read timeout only); 0: the door's default, 1024")
	fl.IntVar(&sc.MaxConns, "max-conns", 0, "most connections open at once, one kept for the connection being accepted (keep it under ulimit -n); below it none is refused; at it a new one takes the place of an idle one, then of a busy one (its body still arriving) of the address holding the most, never of one whose request has arrived whole, else waits in the kernel's accept queue; negative: no bound; 0: the door's default, 1024")
	fl.IntVar(&sc.MaxConnsPerHost, "max-conns-per-host", 0, "at -max-conns only: a new connection of an address (an IPv4 address or IPv6 /64) holding this many is reset at accept, rather than take another's place or wait; below -max-conns none is refused; negative: no bound; 0: the door's default, 8")
	fl.Func("trusted-proxies", "comma-separated networks (CIDR) or addresses of the reverse proxies in front: behind them each request's client, for every request-level bound, is the right-most address of -forwarded-header not theirs, and their connections are never refused for -max-conns-per-host (default: none, every client its remote address)", func(v string) error {
		p, err := clientaddr.ParsePrefixes(v)
		sc.TrustedProxies = append(sc.TrustedProxies, p...)
		return err
	})
	fl.StringVar(&sc.ForwardedHeader, "forwarded-header", "X-Forwarded-For", "the header the trusted proxies append the client's address to: X-Forwarded-For or Forwarded (RFC 7239)")
	fl.IntVar(&sc.MaxIdleConns, "max-idle-conns", 0, "most connections waiting for a request (new, or kept alive between requests), past it the longest waiting closed; negative: no bound; 0: the door's default, 256")
	fl.Func("known-senders", "comma-separated networks (CIDRs) of known senders, such as a provider's published ranges: never cut off, with a quarter of the work slots and body bytes reserved for them and for senders whose webhook signature verified", func(v string) error {
		p, err := clientaddr.ParsePrefixes(v)
		sc.KnownSenders = append(sc.KnownSenders, p...)
		return err
	})
	fl.Func("webhook-secret", "accept only Standard Webhooks signed v1 with this whsec_… secret (repeat for rotation); the key is then webhook-id", func(v string) error {
		s, err := standardwebhooks.ParseSecret(v)
		sc.WebhookSecrets = append(sc.WebhookSecrets, s)
		return err
	})
	fl.Func("webhook-public-key", "accept only Standard Webhooks signed v1a (ed25519) by the key of this whpk_… public key (repeat for rotation; with -webhook-secret, either); the key is then webhook-id", func(v string) error {
		k, err := standardwebhooks.ParsePublicKey(v)
		sc.WebhookPublicKeys = append(sc.WebhookPublicKeys, k)
		return err
	})
	volatile := fl.Bool("redis-volatile", false, "Redis: accept a server without persistence (no AOF, no RDB save points); "+volatileMeaning)
	fl.BoolVar(&cfg.verbose, "v", false, "log every outcome")
	fl.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 0, "on SIGINT or SIGTERM, wait this long for requests in progress and for records and releases retried in the background (default: the lease plus the store's lease, enough for all of them)")
	if err := fl.Parse(args); err != nil {
		return nil, 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "ingest: unexpected arguments %q\n", fl.Args())
		return nil, 2
	}
	if err := cfg.admin.check(); err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return nil, 2
	}
	if _, err := frontdoor.New(frontdoor.Config{ForwardedHeader: sc.ForwardedHeader}); err != nil {
		fmt.Fprintf(stderr, "ingest: -forwarded-header: %v\n", err)
		return nil, 2
	}
	if *volatile {
		sc.RedisDurability = redisstore.AcceptVolatile
		fmt.Fprintln(stderr, "ingest: -redis-volatile: "+volatileMeaning)
	}
	return cfg, 0
}

// serve runs the service cfg describes until ctx ends, then shuts it down;
// it returns the exit status.
func serve(ctx context.Context, cfg *config, stdout, stderr io.Writer) int {
	level := slog.LevelInfo
	if cfg.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.service.Logger = log

	// The service: its stores, and the request path in front of its
	// handler (the verifier's header checks, admission, the signature,
	// the idempotency middleware).
	svc, err := service.New(ctx, cfg.service)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		if errors.Is(err, redisstore.ErrNotDurable) {
			fmt.Fprintln(stderr, "ingest: to accept that, pass -redis-volatile: "+volatileMeaning)
		}
		return 1
	}
	defer svc.Close()

	// The front door: the listener and the HTTP server.
	ln, srv, err := listen(cfg.addr, svc, log)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "ingest: serving http://%s (store %s)\n", ln.Addr(), service.Redacted(cfg.service.Store))
	stopAdmin, err := cfg.admin.start(svc, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		ln.Close()
		return 1
	}
	defer stopAdmin()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 1
	case <-ctx.Done():
	}

	// The shutdown: requests in progress first, then the records and
	// releases the middleware still retries in the background, then the
	// stores (the deferred Close).
	wait := cfg.shutdownTimeout
	if wait <= 0 {
		wait = svc.ShutdownTimeout()
	}
	shutdown, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "ingest: shutdown: %v\n", err)
		return 1
	}
	// Any record or release given up (now, or earlier at the end of its
	// lease) is named, and the exit status is 1: a record dropped lets a
	// retry run its handler again.
	if err := svc.Shutdown(shutdown); err != nil {
		var se *middleware.ShutdownError
		if errors.As(err, &se) {
			log.Error("ingest: records or releases dropped", "records", se.Records, "releases", se.Releases, "pending_at_shutdown", se.Pending)
			fmt.Fprintf(stderr, "ingest: shutdown dropped %d records (a retry after their lease runs the handler again) and %d releases (their keys answered 409 until their lease ended): %v\n",
				se.Records, se.Releases, err)
			return 1
		}
		fmt.Fprintf(stderr, "ingest: shutdown: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ingest: stopped")
	return 0
}

// listen opens the public listener on addr and the HTTP server of svc on
// it, through the service's front door (frontdoor.Door: connections, body
// rate and admission of work, built in one piece).
func listen(addr string, svc *service.Service, log *slog.Logger) (net.Listener, *http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	door := svc.FrontDoor()
	srv := door.Server(svc.Handler())
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	return door.Listener(ln), srv, nil
}
