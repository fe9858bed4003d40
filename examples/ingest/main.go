// Command ingest is a runnable receiving service: GeoJSON features posted
// with an Idempotency-Key are stored exactly once, and every retry is
// answered with the first response.
//
//	go run ./examples/ingest [-addr 127.0.0.1:8080] [-store memory|redis://…|postgres://…]
//	                         [-webhook-secret whsec_…] [-max-in-flight 64] [-max-in-flight-bytes 16777216] [-order-property observation_time]
//	                         [-admin-addr 127.0.0.1:9090]
//
// With -store redis://host:port/db the keys live in Redis (a comma-separated
// list of nodes, redis://h1:p1,h2:p2,h3:p3, selects the Cluster client); the
// service then refuses to start on a Redis that keeps nothing across a
// restart (no AOF, no RDB save points) unless -redis-volatile accepts it
// (see redisstore.Durability); with
// -store postgres://… keys and features live in PostgreSQL, and each
// feature upsert into the PostGIS table commits in the same transaction as
// its key's completion: each geometry goes to PostGIS as EWKB (2D, 3D and
// mixed collections, SRID 4326) and each feature's bytes are kept exactly
// as received. In the memory and Redis modes the features live in process,
// bounded by -max-features and -max-feature-bytes: when full, a write is
// answered 507 feature-store-full (no Retry-After: no room frees by
// itself), and nothing stored is evicted. With
// -max-in-flight and -max-in-flight-bytes (64 requests, 16 MiB by
// default; a remote address is kept to a quarter once three quarters are
// held) the POST requests in
// flight are bounded: past them a request is answered 503 server-busy, or
// 429 client-busy, with Retry-After, before its body is read. With
// -webhook-secret the service accepts only Standard Webhooks signed with
// that secret, verified before the key (then taken from webhook-id) is
// claimed. With -run-log FILE every handler run appends a line per feature
// it is about to write to FILE, before the write (internal/ingest's
// Config.RunLog): crash tests count runs with it across SIGKILLs.
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
//	                      is not "id") and answers 201 {"stored":[ids…]}; a
//	                      store error no retry can fix is 422 (recorded), a
//	                      transient one 503 with Retry-After (key released).
//	                      The newest observation of an id wins (-order-property,
//	                      default observation_time, RFC 3339, else 422 with a
//	                      pointer): an older update changes nothing and is
//	                      answered 200 {"stored":[],"stale":[ids…]}
//	GET  /features/{id}   a stored feature, byte for byte as posted
//	GET  /metrics         outcome counters, store latency histograms, lease
//	                      takeovers, and the features handler runs were about
//	                      to write and the writes the in-memory store skipped
//	                      as already done by the same key (a handler run
//	                      twice), in Prometheus text format
//	GET  /healthz         200 when the key store answers, 503 when it does not
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

	"github.com/geoidem/geoidem/examples/internal/ingest"
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

// volatileMeaning says what -redis-volatile accepts.
const volatileMeaning = "a Redis restart then loses every completed record and every claim in flight, so every retry that arrives after it runs its handler again"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var cfg ingest.Config
	addr := fl.String("addr", "127.0.0.1:8080", "listen address")
	fl.StringVar(&cfg.Store, "store", "memory", "key store: memory, redis://host:port/db, redis://h1:p1,h2:p2 (Cluster) or postgres://…")
	fl.DurationVar(&cfg.Lease, "lease", middleware.DefaultLease, "how long a claim holds its key without renewal")
	fl.DurationVar(&cfg.HandlerTimeout, "handler-timeout", 0, "cancel and roll back a feature write still running after this long, answered 503 and its key released (default 0: a write runs to its end, bounded by the lease)")
	fl.Int64Var(&cfg.MaxBodyBytes, "max-body", middleware.DefaultMaxBodyBytes, "largest request body, in bytes")
	fl.StringVar(&cfg.KeyTable, "pg-key-table", pgstore.DefaultTable, "PostgreSQL: the key store's table")
	fl.StringVar(&cfg.FeaturesTable, "pg-features-table", "features", "PostgreSQL: the PostGIS feature table")
	fl.StringVar(&cfg.RedisPrefix, "redis-prefix", redisstore.DefaultKeyPrefix, "Redis: the key prefix")
	fl.IntVar(&cfg.MaxFeatures, "max-features", ingest.DefaultMaxFeatures, "memory and Redis modes: most features kept in process")
	fl.Int64Var(&cfg.MaxFeatureBytes, "max-feature-bytes", ingest.DefaultMaxFeatureBytes, "memory and Redis modes: most bytes of features kept in process")
	fl.StringVar(&cfg.OrderProperty, "order-property", ingest.DefaultOrderProperty, "the feature property (RFC 3339) by which the newest update of an id wins; features without it: last write wins")
	fl.IntVar(&cfg.MaxInFlight, "max-in-flight", middleware.DefaultMaxInFlight, "most POST requests in flight at once, a client (remote address) kept to a quarter once three quarters are held; over it 503 server-busy or 429 client-busy before the body is read; negative: no bound")
	fl.Int64Var(&cfg.MaxInFlightBytes, "max-in-flight-bytes", middleware.DefaultMaxInFlightBytes, "most POST body bytes in flight at once (by Content-Length), large bodies three quarters, a client a quarter once three quarters are held; negative: no bound")
	fl.DurationVar(&cfg.WriteDelay, "write-delay", 0, "pause this long after writing features, before the write commits (for crash tests)")
	runLog := fl.String("run-log", "", "append a line per feature a handler run is about to write, before the write, to this file (crash tests: it keeps a killed process's runs)")
	fl.Func("webhook-secret", "accept only Standard Webhooks signed with this whsec_… secret (repeat for rotation); the key is then webhook-id", func(v string) error {
		s, err := standardwebhooks.ParseSecret(v)
		cfg.WebhookSecrets = append(cfg.WebhookSecrets, s)
		return err
	})
	volatile := fl.Bool("redis-volatile", false, "Redis: accept a server without persistence (no AOF, no RDB save points); "+volatileMeaning)
	verbose := fl.Bool("v", false, "log every outcome")
	shutdownTimeout := fl.Duration("shutdown-timeout", 0, "on SIGINT or SIGTERM, wait this long for requests in progress and for records and releases retried in the background (default: the lease plus the store's lease, enough for all of them)")
	admin := newAdminFlag(fl)
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "ingest: unexpected arguments %q\n", fl.Args())
		return 2
	}
	if err := admin.check(); err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 2
	}
	if *runLog != "" {
		f, err := os.OpenFile(*runLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "ingest: %v\n", err)
			return 1
		}
		defer f.Close()
		cfg.RunLog = f
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Logger = log
	if *volatile {
		cfg.RedisDurability = redisstore.AcceptVolatile
		fmt.Fprintln(stderr, "ingest: -redis-volatile: "+volatileMeaning)
	}

	svc, err := ingest.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		if errors.Is(err, redisstore.ErrNotDurable) {
			fmt.Fprintln(stderr, "ingest: to accept that, pass -redis-volatile: "+volatileMeaning)
		}
		return 1
	}
	defer svc.Close()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 1
	}
	srv := &http.Server{
		Handler:           svc.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second, // slow bodies end here, before anything is claimed
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(stdout, "ingest: serving http://%s (store %s)\n", ln.Addr(), ingest.Redacted(cfg.Store))
	stopAdmin, err := admin.start(svc, stdout)
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
	wait := *shutdownTimeout
	if wait <= 0 {
		wait = svc.ShutdownTimeout()
	}
	shutdown, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "ingest: shutdown: %v\n", err)
		return 1
	}
	// Records and releases that failed in a store outage are retried in
	// the background: wait for them before the store is closed. Any given
	// up (now, or earlier at the end of their lease) are named, and the
	// exit status is 1: a record dropped lets a retry run its handler again.
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
