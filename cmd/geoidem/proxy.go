package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/internal/clientaddr"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
	"github.com/geoidem/geoidem/standardwebhooks"
)

const proxyUsage = `usage:
  geoidem proxy -upstream URL [-addr 127.0.0.1:8080] [-store memory|redis://…|postgres://…] [flags]
run 'geoidem proxy -h' for the flags.
`

// proxyConfig is what the proxy's flags say.
type proxyConfig struct {
	addr, upstream, store, path   string
	redisPrefix, pgTable          string
	redisVolatile                 bool
	lease, retention, timeout     time.Duration
	hold, idle, shutdown          time.Duration
	maxBody                       int64
	maxInFlight                   int
	maxInFlightBytes, minBodyRate int64
	maxKeys, clientKeys           int
	clientWindow                  time.Duration
	redisMaxMemory, pgMaxKeys     int64
	door                          frontdoor.Config // its connection and client settings, from the flags
	knownSenders                  []netip.Prefix
	secrets                       []standardwebhooks.Secret
	publicKeys                    []standardwebhooks.PublicKey
	noValidate, verbose           bool
	adminAddr                     string
}

// parseProxyFlags returns the configuration args give, or nil and the exit
// status of a usage error. The flags shared with examples/ingest keep its
// names, defaults and meanings.
func parseProxyFlags(args []string, stderr io.Writer) (*proxyConfig, int) {
	fl := flag.NewFlagSet("geoidem proxy", flag.ContinueOnError)
	fl.SetOutput(stderr)
	c := &proxyConfig{hold: -1}
	fl.StringVar(&c.upstream, "upstream", "", "the receiver's base URL, http://host:port[/prefix]: each request is forwarded to the prefix followed by its path (required)")
	fl.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address")
	fl.StringVar(&c.path, "path", "/", "the path prefix the proxy covers: POST and PATCH under it are made idempotent, every other request answered 404")
	fl.StringVar(&c.store, "store", "memory", "key store: memory, redis://host:port/db, redis://h1:p1,h2:p2 (Cluster) or postgres://…")
	fl.DurationVar(&c.lease, "lease", middleware.DefaultLease, "how long a claim holds its key without renewal")
	fl.DurationVar(&c.retention, "retention", 0, "how long a recorded answer is kept for the sender's retries: the longest retry schedule among your senders plus an attempt's timeout (default 30h with -webhook-secret or -webhook-public-key, over Svix's 27.6 h schedule; 24h without)")
	fl.DurationVar(&c.timeout, "upstream-timeout", 0, "give up on an upstream call after this long; the request was sent, so its key is held as uncertain (default: half the lease)")
	fl.Var((*optionalDuration)(&c.hold), "uncertain-hold", "how long a key whose upstream outcome is unknown (sent, then a reset, a timeout, a 502 or 504) is held (a `duration`), every retry answered 503 upstream-uncertain, until an operator releases it (geoidem keys release); 0 releases it at once, for an upstream that deduplicates by the forwarded Idempotency-Key (default: the retention)")
	fl.DurationVar(&c.idle, "upstream-idle-timeout", 2*time.Second, "close a connection to the upstream idle this long: keep it under the upstream's own keep-alive timeout, so that no request is sent on a connection the upstream is closing")
	fl.Int64Var(&c.maxBody, "max-body", middleware.DefaultMaxBodyBytes, "largest request body, in bytes")
	fl.StringVar(&c.pgTable, "pg-key-table", pgstore.DefaultTable, "PostgreSQL: the key store's table")
	fl.StringVar(&c.redisPrefix, "redis-prefix", redisstore.DefaultKeyPrefix, "Redis: the key prefix")
	fl.BoolVar(&c.redisVolatile, "redis-volatile", false, "Redis: accept a server without persistence (no AOF, no RDB save points); a Redis restart then loses every record and claim, so every retry after it runs again")
	fl.IntVar(&c.maxInFlight, "max-in-flight", 0, "most POST requests whose handlers run at once (work slots, taken once the body has arrived), a client kept to a quarter once three quarters are held; none free within 5 s: 503 server-busy or 429 client-busy; negative: no bound; 0: the door's default, 64")
	fl.Int64Var(&c.maxInFlightBytes, "max-in-flight-bytes", 0, "most POST body bytes arriving or in work at once (by Content-Length), large bodies three quarters, a client a quarter once three quarters are held; negative: no bound; 0: the door's default, 16 MiB")
	fl.Int64Var(&c.minBodyRate, "min-body-rate", 0, "least rate, in bytes a second, at which a POST body must arrive after a 5 s grace, else 408 body-too-slow and its bytes freed; negative: no bound (the 30 s read timeout only); 0: the door's default, 1024")
	fl.IntVar(&c.maxKeys, "max-keys", 140_000, "memory mode: most keys held; a lone sender may use all but a quarter")
	fl.IntVar(&c.clientKeys, "client-keys", 0, "without webhook keys: most new keys one address may claim in -client-window; in memory mode only once the last quarter of -max-keys is reached; 0: the store's default (memory 64, fewer under 4096 -max-keys; Redis and PostgreSQL 50000); negative: no bound")
	fl.DurationVar(&c.clientWindow, "client-window", 0, "the window of -client-keys, starting with an address's first counted new key; 0: the store's default (memory 1m, Redis and PostgreSQL 1h)")
	fl.Int64Var(&c.redisMaxMemory, "redis-max-memory", 0, "Redis: the server's used_memory, in bytes, at which new keys are refused 503 store-full (Retry-After: when the store's earliest key ends), all clients together, replays still answered; 0 (default): nine tenths of the server's maxmemory, or no bound, said in the log, when it sets none; negative: no bound")
	fl.Int64Var(&c.pgMaxKeys, "pg-max-keys", defaultPGMaxKeys, "PostgreSQL: the rows of the key table at which new keys are refused 503 store-full (Retry-After: when the earliest row can be pruned), all clients together, replays still answered; size it to the disk; negative: no bound")
	fl.IntVar(&c.door.MaxConns, "max-conns", 0, "most connections open at once, one kept for the connection being accepted (keep it under ulimit -n); below it none is refused; at it a new one takes the place of an idle one, then of a busy one (its body still arriving) of the address holding the most, never of one whose request has arrived whole, else waits in the kernel's accept queue; negative: no bound; 0: the door's default, 1024")
	fl.IntVar(&c.door.MaxConnsPerHost, "max-conns-per-host", 0, "at -max-conns only: a new connection of an address (an IPv4 address or IPv6 /64) holding this many is reset at accept, rather than take another's place or wait; below -max-conns none is refused; negative: no bound; 0: the door's default, 8")
	fl.IntVar(&c.door.MaxIdle, "max-idle-conns", 0, "most connections waiting for a request (new, or kept alive between requests), past it the longest waiting closed; negative: no bound; 0: the door's default, 256")
	fl.Func("trusted-proxies", "comma-separated networks (CIDR) or addresses of the reverse proxies in front: behind them each request's client, for every request-level bound, is the right-most address of -forwarded-header not theirs, and their connections are never refused for -max-conns-per-host (default: none, every client its remote address)", func(v string) error {
		p, err := clientaddr.ParsePrefixes(v)
		c.door.TrustedProxies = append(c.door.TrustedProxies, p...)
		return err
	})
	fl.StringVar(&c.door.ForwardedHeader, "forwarded-header", "X-Forwarded-For", "the header the trusted proxies append the client's address to: X-Forwarded-For or Forwarded (RFC 7239)")
	fl.Func("known-senders", "comma-separated networks (CIDRs) of known senders, such as a provider's published ranges: never cut off, with a quarter of the work slots and body bytes reserved for them and for senders whose webhook signature verified", func(v string) error {
		p, err := clientaddr.ParsePrefixes(v)
		c.knownSenders = append(c.knownSenders, p...)
		return err
	})
	fl.Func("webhook-secret", "accept only Standard Webhooks signed v1 with this whsec_… secret (repeat for rotation); the key is then webhook-id, forwarded as Idempotency-Key too", func(v string) error {
		s, err := standardwebhooks.ParseSecret(v)
		c.secrets = append(c.secrets, s)
		return err
	})
	fl.Func("webhook-public-key", "accept only Standard Webhooks signed v1a by this whpk_… public key (repeat for rotation); the key is then webhook-id", func(v string) error {
		k, err := standardwebhooks.ParsePublicKey(v)
		c.publicKeys = append(c.publicKeys, k)
		return err
	})
	fl.BoolVar(&c.noValidate, "no-validate", false, "forward bodies without RFC 7946 GeoJSON validation (by default an invalid body is answered 422 and never reaches the upstream)")
	fl.StringVar(&c.adminAddr, "admin-addr", "", "serve the key store's admin API (geoidem keys -store http://ADDR) on this loopback address; never a public one")
	fl.BoolVar(&c.verbose, "v", false, "log every outcome")
	fl.DurationVar(&c.shutdown, "shutdown-timeout", 0, "on SIGINT or SIGTERM, wait this long for requests in progress and for records retried in the background (default: the lease plus the store's lease)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "geoidem proxy: unexpected arguments %q\n%s", fl.Args(), proxyUsage)
		return nil, 2
	}
	u, err := url.Parse(c.upstream)
	if c.upstream == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "geoidem proxy: -upstream must be an http:// or https:// URL, got %q\n%s", c.upstream, proxyUsage)
		return nil, 2
	}
	if !strings.HasPrefix(c.path, "/") {
		fmt.Fprintf(stderr, "geoidem proxy: -path must start with /, got %q\n", c.path)
		return nil, 2
	}
	if _, err := clientaddr.NewProxies(nil, c.door.ForwardedHeader); err != nil {
		fmt.Fprintf(stderr, "geoidem proxy: -forwarded-header: %v\n", err)
		return nil, 2
	}
	if c.adminAddr != "" {
		if err := loopbackOnly(c.adminAddr); err != nil {
			fmt.Fprintf(stderr, "geoidem proxy: %v\n", err)
			return nil, 2
		}
	}
	return c, 0
}

func proxy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, code := parseProxyFlags(args, stderr)
	if c == nil {
		return code
	}
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	p, err := newProxy(ctx, c, log)
	if err != nil {
		fmt.Fprintf(stderr, "geoidem proxy: %v\n", err)
		if errors.Is(err, redisstore.ErrNotDurable) {
			fmt.Fprintln(stderr, "geoidem proxy: to accept that, pass -redis-volatile")
		}
		return 1
	}
	defer p.close()

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		fmt.Fprintf(stderr, "geoidem proxy: %v\n", err)
		return 1
	}
	// The front door: its server (ConnState, timeouts, answers that need
	// no body) on its listener (the connection bounds).
	srv := p.door.Server(p.handler)
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	ln = p.door.Listener(ln)
	fmt.Fprintf(stdout, "geoidem proxy: serving http://%s, forwarding to %s (store %s)\n", ln.Addr(), redacted(c.upstream), redacted(c.store))
	if c.adminAddr != "" {
		admin, ok := p.keys.(adminhttp.Admin)
		if !ok {
			fmt.Fprintln(stderr, "geoidem proxy: -admin-addr: the key store has no admin API")
			return 1
		}
		aln, err := net.Listen("tcp", c.adminAddr)
		if err != nil {
			fmt.Fprintf(stderr, "geoidem proxy: -admin-addr: %v\n", err)
			return 1
		}
		asrv := &http.Server{Handler: adminhttp.Handler(admin), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = asrv.Serve(aln) }()
		defer asrv.Close()
		fmt.Fprintf(stdout, "geoidem proxy: admin on http://%s (loopback only)\n", aln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "geoidem proxy: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	wait := c.shutdown
	if wait <= 0 {
		wait = c.lease + p.idem.StoreLease()
	}
	sctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "geoidem proxy: shutdown: %v\n", err)
		return 1
	}
	if err := p.idem.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "geoidem proxy: shutdown: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "geoidem proxy: stopped")
	return 0
}

// proxyService is the proxy's request path and what it holds open.
type proxyService struct {
	handler http.Handler // the routes: serve them through door.Server on door.Listener
	door    *frontdoor.Door
	idem    *middleware.Middleware
	m       *metrics // its /metrics
	keys    keystore.Store
	close   func()
}

// newProxy opens the key store and builds the request path in front of the
// forwarder, in the order examples/ingest's service uses: the webhook
// verifier's header checks, the front door (frontdoor.Door: the body
// arrives in full at the body rate, then takes a work slot), the
// signature, the idempotency middleware with RFC 7946 validation, the
// forwarder. The Door's connection bounds are its Listener's and its
// Server's: serve the handler through them.
func newProxy(ctx context.Context, c *proxyConfig, log *slog.Logger) (*proxyService, error) {
	signed := len(c.secrets)+len(c.publicKeys) > 0
	keys, closeKeys, err := openProxyStore(ctx, c, signed, log)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*proxyService, error) { closeKeys(); return nil, err }
	base, _ := url.Parse(c.upstream)
	m := newMetrics()
	lease := c.lease
	if lease <= 0 {
		lease = middleware.DefaultLease
	}
	var verify *standardwebhooks.Verifier
	if signed {
		if verify, err = standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{Secrets: c.secrets, PublicKeys: c.publicKeys, MaxBodyBytes: c.maxBody, Logger: log}); err != nil {
			return fail(err)
		}
	}
	// The front door: connections, body rate, admission of work, known
	// senders and client identity, built in one piece.
	fc := c.door
	fc.MinBodyRate, fc.MaxInFlight, fc.MaxBytes, fc.MaxBodyBytes = c.minBodyRate, c.maxInFlight, c.maxInFlightBytes, c.maxBody
	fc.KnownNetworks, fc.Logger = c.knownSenders, log
	if verify != nil {
		fc.Verify = verify.Verify
	}
	door, err := frontdoor.New(fc)
	if err != nil {
		return fail(err)
	}
	m.door = door

	keyHeader, retention := middleware.DefaultKeyHeader, c.retention
	client := door.Client // the front door's clients, for the key store's bounds
	if signed {
		keyHeader, client = standardwebhooks.HeaderID, nil
		if retention <= 0 {
			retention = 30 * time.Hour
		}
	}
	if retention <= 0 {
		retention = middleware.DefaultRetention
	}
	var validator middleware.Validator
	if !c.noValidate {
		validator = geojson.RequestValidator{}
	}
	idem, err := middleware.New(keys, middleware.Config{
		KeyHeader:    keyHeader,
		Client:       client,
		MaxBodyBytes: c.maxBody,
		Lease:        lease,
		Retention:    retention,
		Validator:    validator,
		// The upstream's answer as it sent it, with the proxy's own
		// Retry-After and uncertain marker.
		ReplayHeaders: append(slices.Clone(middleware.DefaultReplayHeaders), "Cache-Control", "Retry-After", outcomeHeader),
		Logger:        log,
		Observer:      m.observe,
		StoreObserver: m.observeStore,
	})
	if err != nil {
		return fail(err)
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = lease / 2
	}
	hold := c.hold
	if hold < 0 {
		hold = retention
	}
	maxConns := c.maxInFlight // an idle upstream connection per work slot
	if maxConns <= 0 {
		maxConns = 64 // the front door's default work slots, or as many with no bound
	}
	fwd := &forwarder{
		base: base, client: &http.Client{Transport: upstreamTransport(c.idle, maxConns), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		keyHeader: keyHeader, timeout: timeout, retryAfter: middleware.DefaultRetryAfter,
		maxRecord: middleware.DefaultMaxRecordBytes, metrics: m, log: log,
		hold: &uncertain{store: keys, hold: hold, retryAfter: middleware.DefaultRetryAfter, timeout: middleware.DefaultStoreTimeout, metrics: m, log: log},
	}

	// The POST route, built inside out: a request meets the verifier's
	// header checks, the front door, the signature, the middleware.
	post := idem.Handler(fwd)
	if verify != nil {
		post = verify.Handler(post) // the signature, over the body, before the claim
	}
	post = door.Handler(post)
	if verify != nil {
		post = verify.Precheck(post) // headers and URL only: before the body is read
	}
	prefix := c.path
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	mux.Handle("GET /healthz", health(keys))
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" || r.URL.Path == "/healthz" {
			mux.ServeHTTP(w, r)
			return
		}
		if !strings.HasPrefix(r.URL.Path, prefix) {
			writeProblem(w, http.StatusNotFound, 0, problem.TypeBase+"not-found", "Not found", "This proxy forwards no such path.")
			return
		}
		post.ServeHTTP(w, r) // POST and PATCH claim a key; other methods pass through to the upstream
	})
	return &proxyService{handler: handler, door: door, idem: idem, m: m, keys: keys, close: closeKeys}, nil
}

// optionalDuration is a duration flag whose default, negative, means
// "not set": its String is then empty, and -h shows no default.
type optionalDuration time.Duration

func (d *optionalDuration) String() string {
	if d == nil || *d <= 0 { // the zero value too, so that -h shows no default
		return ""
	}
	return time.Duration(*d).String()
}

func (d *optionalDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return errors.New("negative")
	}
	*d = optionalDuration(v)
	return nil
}

// health answers 200 when the key store answers a ping within a second,
// 503 when it does not, as examples/ingest's /healthz.
func health(s keystore.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		status, body := http.StatusOK, map[string]string{"status": "ok", "store": "reachable"}
		if p, ok := s.(keystore.Pinger); ok {
			if err := p.Ping(ctx); err != nil {
				status, body = http.StatusServiceUnavailable, map[string]string{"status": "unhealthy", "store": "unreachable", "error": err.Error()}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// loopbackOnly refuses an address whose host is not a loopback IP address
// or localhost.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-admin-addr %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-admin-addr %q: not a loopback address; the admin API reads recorded answers and frees keys", addr)
	}
	return nil
}
