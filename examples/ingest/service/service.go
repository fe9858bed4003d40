// Package service is the receiving service of examples/ingest: GeoJSON
// features posted with an idempotency key are upserted by id exactly once,
// the newest observation of each id kept, behind the geoidem middleware, on
// the store a URL names. Its command (examples/ingest, package main) adds
// the flags, the listener and the shutdown; examples/chaos runs the same
// service under faults, wrapping its feature store to count handler runs.
//
// It is a package of its own, beside the command, only so that
// examples/chaos can run it: a team that copies examples/ingest copies
// both, and replaces the feature stores (features.go, memory.go,
// redisfeatures.go, postgis.go) with its own.
//
// # The request path
//
// A POST /features meets, in order (see [New]):
//
//  1. the Standard Webhooks verifier's checks of the headers and the URL,
//     when the service takes signed webhooks only: unsigned traffic is
//     answered 401 before anything reads its body or holds a slot;
//  2. the front door (frontdoor.Door): the body arrives in full, within
//     the bytes in flight and at the body rate (408 when it falls behind
//     or is cut off to make room), and only then takes a work slot (429 or
//     503 with Retry-After when none frees in time); a sender whose
//     signature verified, or in -known-senders, has room reserved and is
//     never cut off; the answer is written after the slot is given back;
//  3. the verifier's signature check over the body, before the key is
//     claimed, so that a forgery claims nothing;
//  4. the idempotency middleware: claim, RFC 7946 validation (422 with a
//     JSON pointer per problem), the handler, record, replay;
//  5. the handler: the features of the validated document, their
//     observation times read and checked (newest.FromProperties,
//     newest.Policy), upserted into the feature store by the rule of
//     package newest.
//
// # Failures
//
// A feature store answers an error wrapping a [*RefusedError] only for the
// features' own fault (a PostgreSQL data or constraint error raised by a
// feature's own statement, a geometry PostGIS refuses, a request larger than
// the whole in-memory store): 422, recorded, every retry answered the same.
// A [*ConflictError], a refusal for the state of other rows (a foreign key
// to a row not there yet, a unique or exclusion constraint another row
// holds), is 409 with Retry-After and the key released: another write can
// lift it. [ErrStoreFull] is 507 (the in-memory store evicts nothing). Every other
// error, whatever it is, is transient: 503 with Retry-After and the key
// released, so that the sender's retry runs again. An error nobody
// classified costs retries, never a valid event.
package service

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore/adminhttp"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/newest"
	"github.com/geoidem/geoidem/observe/promobserve"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// Retention defaults: how long a recorded answer is kept for replay.
//
// A record must outlast every retry its sender may still make after the
// delivery ran: from the first attempt to the last one of its schedule (a
// retry comes only when an acknowledgement was lost, and may come that
// late). Size it as the sender's whole schedule plus the time an attempt
// may take (its timeout) for each attempt, and some margin; a record
// dropped before the sender's last retry lets that retry run the handler
// again. Svix, the most common Standard Webhooks sender, retries after
// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (https://docs.svix.com/retries):
// 27 h 35 min after the first attempt, which the middleware's 24 h
// default does not cover. The paired sender (package client) ends a
// delivery at its Deadline.
const (
	// DefaultRetention is the retention without webhook keys: the
	// middleware's default, 24 h, well over the paired sender's deadlines.
	DefaultRetention = middleware.DefaultRetention
	// DefaultSignedRetention is the retention with webhook keys (Config.
	// WebhookSecrets or WebhookPublicKeys): 30 h, over Svix's 27.6 h with
	// room for each attempt's 15 s timeout and delays in its queue.
	DefaultSignedRetention = 30 * time.Hour
)

// Key store bounds (Config.MaxKeys, Config.ClientKeys).
const (
	// DefaultMaxKeys is the memory store's size: a lone sender stores
	// 105,000 keys (all but the headroom, a quarter) before it is held to
	// ClientKeys.
	DefaultMaxKeys = 140_000
	// DefaultClientKeys is each client's bound on new keys per
	// ClientWindow (default an hour) on Redis and PostgreSQL: about 14 new
	// keys a second, sustained, from one address. The memory store, which
	// counts only under contention, has memstore's default instead.
	DefaultClientKeys = 50_000
	// DefaultPGMaxKeys bounds the rows of the PostgreSQL key table, all
	// clients together (Config.PGMaxKeys): ten million, a few gigabytes
	// of table and index with small recorded answers, well over what
	// legitimate senders hold in a retention (115 new keys a second,
	// sustained for 24 h), and far under what a flood of rotating
	// addresses adds, each within its ClientKeys, before the disk fills.
	// PostgreSQL has no setting to draw it from, as Redis has maxmemory:
	// size it to the disk.
	DefaultPGMaxKeys = 10_000_000
)

// Config configures a Service. Zero fields mean the defaults shown.
type Config struct {
	// Store names the key store and the feature store (see [New]):
	// "memory" (default), redis://host:port/db, redis://h1:p1,h2:p2
	// (Cluster) or postgres://….
	Store string
	// Lease is the middleware's lease (middleware.DefaultLease).
	Lease time.Duration
	// StoreTimeout is the middleware's store timeout (middleware.DefaultStoreTimeout).
	StoreTimeout time.Duration
	// RetryAfter is the middleware's Retry-After for 409 and 503
	// (middleware.DefaultRetryAfter).
	RetryAfter time.Duration
	// Retention is how long a recorded answer is kept for replay: it must
	// outlast the senders' retries (see DefaultSignedRetention for how to
	// size it). Default DefaultSignedRetention (30 h) with webhook keys,
	// DefaultRetention (24 h) without.
	Retention time.Duration
	// HandlerTimeout is the middleware's Config.HandlerTimeout: when
	// positive, a feature write still running after it is canceled and
	// rolled back, answered 503 and its key released. Default 0: a write
	// runs to its end (the lease bounds it), whether or not its client
	// waits.
	HandlerTimeout time.Duration
	// MaxBodyBytes bounds request bodies (middleware.DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// WebhookSecrets (v1, whsec_…) and WebhookPublicKeys (v1a, whpk_…),
	// if any, make the service accept only Standard Webhooks signed with
	// one of them; the key is then webhook-id. Unsigned traffic is refused
	// from its headers, in front of admission; the signature is verified
	// over the body behind admission, before the key is claimed.
	WebhookSecrets    []standardwebhooks.Secret
	WebhookPublicKeys []standardwebhooks.PublicKey
	// Validator checks bodies after the claim. Default: RFC 7946 validation
	// (geojson.RequestValidator), so geometry no retry can fix is 422.
	Validator middleware.Validator
	// KeyTable and FeaturesTable name the PostgreSQL tables
	// (pgstore.DefaultTable, "features"); RedisPrefix the Redis key prefix
	// (redisstore.DefaultKeyPrefix).
	KeyTable, FeaturesTable, RedisPrefix string
	// RedisDurability is what the Redis store accepts of the server's
	// persistence (redisstore.RefuseVolatile: it refuses a Redis that keeps
	// nothing across a restart); see redisstore.Durability. Whatever it
	// says, New fails on a Redis that does not answer.
	RedisDurability redisstore.Durability
	// RedisWaitReplicas is the Redis store's Config.WaitReplicas: how many
	// replicas must acknowledge each claim, and each feature write before
	// its 201 (default 0: none waited for).
	RedisWaitReplicas int
	// MaxFeatures and MaxFeatureBytes bound the in-memory feature store of
	// the memory mode (DefaultMaxFeatures, DefaultMaxFeatureBytes:
	// ids and feature bytes). When a write does not fit it is refused with
	// 507 (feature-store-full, no Retry-After: no room frees by itself) and
	// its key released (the paired sender retries it with its backoff); no stored feature is ever evicted. A request that
	// alone exceeds a bound is answered 422 (feature-rejected).
	MaxFeatures     int
	MaxFeatureBytes int64
	// OrderProperty names the Feature property that orders the updates of
	// one feature id (DefaultOrderProperty, observation_time): an RFC 3339
	// date-time, read with newest.FromProperties. The rule is package
	// newest's: a feature older than the one stored under its id changes
	// nothing and is answered as stale; a feature without the property
	// replaces one stored without it (last write wins) and never one
	// stored with it (answered as unstamped); a value that is not an RFC
	// 3339 date-time string is a 422 (observation-time-invalid).
	OrderProperty string
	// MaxObservationSkew is how far ahead of the service's clock an
	// observation time may be (newest.Policy.MaxSkew; default
	// 5 minutes). A time further ahead would pin
	// its feature until the clock passes it: it is refused, 503
	// (observation-time-ahead) with Retry-After when the clock will have
	// caught up, and released, so that the same delivery succeeds then.
	MaxObservationSkew time.Duration
	// MaxInFlight bounds the POST requests whose handlers run at once
	// (their bodies arrived), and MaxInFlightBytes the bytes of the POST
	// bodies arriving or in work (frontdoor.Config.MaxInFlight and
	// MaxBytes, keyed by the remote address): zero means the front
	// door's defaults, 64 and 16 MiB; a client is kept to a quarter once
	// three quarters are held; negative turns the bound off.
	MaxInFlight      int
	MaxInFlightBytes int64
	// MaxConns, MaxConnsPerHost and MaxIdleConns bound the connections
	// (frontdoor.Config.MaxConns, MaxConnsPerHost and MaxIdle; their
	// defaults).
	MaxConns, MaxConnsPerHost, MaxIdleConns int
	// KnownSenders are the networks of known senders (a provider's
	// published ranges): never cut off, with a quarter of the work slots
	// and bytes reserved for them and for senders whose webhook signature
	// verified.
	KnownSenders []netip.Prefix
	// MinBodyRate is the least rate, in bytes a second, at which a POST
	// body must arrive after a grace of 5 s (frontdoor.Config.MinBodyRate): a slower
	// one is cut off with 408 body-too-slow, so that it holds its bytes
	// for the grace plus its length at that rate, not for the server's
	// read timeout. Zero means the front door's default, 1 KiB/s;
	// negative turns it off.
	MinBodyRate int64
	// Without webhook keys, every POST's client is its remote address (an
	// IPv4 address or an IPv6 /64, a /48 four clients at most:
	// middleware.RemoteClient) or, behind a trusted proxy, the client it
	// forwards (TrustedProxies), and the key
	// store bounds each client's new keys so that a few addresses cannot
	// fill it; with webhook keys only verified senders reach the key
	// store, and none of these bounds applies to them (MaxKeys still does).
	//
	// MaxKeys bounds the keys the memory store holds (memstore.Config.
	// MaxEntries; default DefaultMaxKeys). A lone client may use all but
	// its headroom (a quarter); once less than that is free, each client
	// is held to ClientKeys new keys per ClientWindow.
	MaxKeys int
	// EvictAfter is the memory store's floor of eviction (memstore.Config.
	// EvictAfter): when it is full, completed records older than this make
	// room for new keys, oldest first, counted in /metrics
	// (geoidem_store_evicted_total) and logged; a retry of an evicted
	// record's request runs again. Default an hour; negative: never (a
	// full store then refuses new keys until records reach the end of
	// their retention).
	EvictAfter time.Duration
	// ClientKeys bounds each client's new keys, on every store: at most
	// ClientKeys in a window of ClientWindow that starts with the
	// client's first counted key (Config.ClientKeys and ClientWindow of
	// memstore, redisstore and pgstore). The memory store counts and
	// refuses only under contention (once less than its headroom is
	// free); its defaults are memstore's (64 a minute, fewer in a store
	// under 4,096 keys). Redis and PostgreSQL count every new key;
	// their defaults are DefaultClientKeys an hour. Negative: no bound.
	// Size it over your busiest legitimate sender's new keys in a
	// window, or use webhook keys.
	ClientKeys   int
	ClientWindow time.Duration
	// RedisMaxMemory bounds what all clients together make Redis hold
	// (redisstore.Config.MaxMemory, in bytes of the server's used_memory):
	// at it, new keys are refused 503 store-full with a Retry-After that
	// says when the store's earliest key ends, while replays and keys in
	// flight are answered as usual, before Redis's own maxmemory refuses
	// every write or evicts records. Default 0: nine tenths of the
	// server's maxmemory (redisstore.SuggestedMaxMemory), or, when the
	// server sets none, no bound, logged at start (nothing else tells
	// the service how much memory the server may take); negative: no
	// bound.
	RedisMaxMemory int64
	// PGMaxKeys bounds the rows of the PostgreSQL key table, all clients
	// together (pgstore.Config.MaxKeys): at it, new keys are refused 503
	// store-full with a Retry-After that says when the janitor can delete
	// the earliest-ending row, while replays and keys in flight are
	// answered as usual. Default DefaultPGMaxKeys; negative: no bound.
	PGMaxKeys int64
	// TrustedProxies and ForwardedHeader name each request's client for
	// every request-level bound (the front door's shares, the key store's
	// client bounds): its remote address or, behind the trusted proxies,
	// the client they forward in ForwardedHeader (frontdoor.Config's
	// TrustedProxies and ForwardedHeader; default: no proxy trusted).
	TrustedProxies  []netip.Prefix
	ForwardedHeader string
	// Logger receives the middleware's and the service's logs (default:
	// none), among them a warning per refusal (400, 413, 415, 422, 429,
	// 503), at most 10 a minute.
	Logger *slog.Logger
	// Metrics is the registry GET /metrics serves, into which the service
	// registers its metrics (default: a registry of its own).
	Metrics *prometheus.Registry
	// WrapFeatures, if set, wraps the feature store the service opens:
	// what it returns is the store the handler uses. For instrumentation of
	// a team's own, or a harness's (examples/chaos counts handler runs
	// with it); a wrapper must keep the [FeatureStore] contract.
	WrapFeatures func(FeatureStore) FeatureStore
}

// Service is the receiving service: [Service.Handler] serves
// POST /features, GET /features/{id}, GET /metrics and GET /healthz.
type Service struct {
	stores   *stores
	features FeatureStore
	handler  http.Handler
	idem     *middleware.Middleware
	door     *frontdoor.Door
	lease    time.Duration
	log      *slog.Logger

	orderProperty string
	policy        newest.Policy
	retryAfter    time.Duration
	counts        [3]prometheus.Counter // geoidem_features_total: stored, stale, unstamped
}

// New opens the stores cfg.Store names and builds the service on them:
//
//	memory                            keys and features in process (default)
//	redis://127.0.0.1:6379/0          keys and features in Redis (two round trips:
//	                                  the feature write, then the key's completion)
//	redis://h1:7000,h2:7001,h3:7002   the same on a Redis Cluster (any seed nodes;
//	                                  the features share one slot)
//	postgres://user@host:5432/db      keys and PostGIS features in PostgreSQL, each
//	                                  feature write and its key's completion in one
//	                                  transaction
//
// It fails when a store cannot be used: a Redis or PostgreSQL that does not
// answer, refuses the credentials or the database, or (Redis) keeps nothing
// across a restart unless Config.RedisDurability accepts it.
func New(ctx context.Context, cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	prom, err := promobserve.New(reg)
	if err != nil {
		return nil, err
	}
	s := &Service{
		lease:         orDefault(cfg.Lease, middleware.DefaultLease),
		log:           log,
		orderProperty: orDefault(cfg.OrderProperty, DefaultOrderProperty),
		policy:        newest.Policy{MaxSkew: cfg.MaxObservationSkew},
		retryAfter:    orDefault(cfg.RetryAfter, middleware.DefaultRetryAfter),
	}
	counts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "geoidem_features_total",
		Help: "Features of the requests whose write committed, by what the newest-observation rule did with them: stored, stale (a newer observation is stored) or unstamped (no time, and a stamped observation is stored)."},
		[]string{"result"})
	if err := reg.Register(counts); err != nil {
		return nil, err
	}
	for i, result := range []string{"stored", "stale", "unstamped"} {
		s.counts[i] = counts.WithLabelValues(result)
	}

	// The stores: the key store, and the feature store the handler writes.
	if s.stores, err = open(ctx, cfg, log); err != nil {
		return nil, err
	}
	for _, c := range s.stores.metrics {
		if err := reg.Register(c); err != nil {
			s.stores.close()
			return nil, err
		}
	}
	s.features = s.stores.features
	if cfg.WrapFeatures != nil {
		s.features = cfg.WrapFeatures(s.features)
	}
	fail := func(err error) (*Service, error) { s.stores.close(); return nil, err }

	// The verifier, when the service takes signed webhooks only.
	signed := len(cfg.WebhookSecrets)+len(cfg.WebhookPublicKeys) > 0
	var verify *standardwebhooks.Verifier
	if signed {
		if verify, err = standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
			Secrets: cfg.WebhookSecrets, PublicKeys: cfg.WebhookPublicKeys, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log,
		}); err != nil {
			return fail(err)
		}
	}

	// The front door: connections, body rate, admission of work, known
	// senders and client identity, built in one piece; a request's body
	// arrives in full (and is verified) before it takes a work slot.
	fc := frontdoor.Config{
		MaxConns: cfg.MaxConns, MaxConnsPerHost: cfg.MaxConnsPerHost, MaxIdle: cfg.MaxIdleConns,
		TrustedProxies: cfg.TrustedProxies, ForwardedHeader: cfg.ForwardedHeader, MinBodyRate: cfg.MinBodyRate,
		MaxInFlight: cfg.MaxInFlight, MaxBytes: cfg.MaxInFlightBytes, MaxBodyBytes: cfg.MaxBodyBytes,
		RetryAfter: cfg.RetryAfter, KnownNetworks: cfg.KnownSenders, Logger: log,
	}
	if verify != nil {
		fc.Verify = verify.Verify
	}
	if s.door, err = frontdoor.New(fc); err != nil {
		return fail(err)
	}
	if err := reg.Register(promobserve.FrontDoor(s.door)); err != nil {
		return fail(err)
	}

	// The idempotency middleware.
	keyHeader, retention := middleware.DefaultKeyHeader, orDefault(cfg.Retention, DefaultRetention)
	client := s.door.Client // the front door's clients, for the key store's bounds
	if signed {
		keyHeader, retention = standardwebhooks.HeaderID, orDefault(cfg.Retention, DefaultSignedRetention)
		client = nil
	}
	validator := cfg.Validator
	if validator == nil {
		validator = geojson.RequestValidator{}
	}
	if s.idem, err = middleware.New(s.stores.keys, middleware.Config{
		KeyHeader: keyHeader,
		// Each client has its share of the key store, so that one
		// client's flood of keys cannot deny the others; verified
		// senders are exempt.
		Client:         client,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		Lease:          cfg.Lease,
		Retention:      retention,
		StoreTimeout:   cfg.StoreTimeout,
		RetryAfter:     cfg.RetryAfter,
		HandlerTimeout: cfg.HandlerTimeout,
		Validator:      validator,
		// The handler's own problem documents keep Cache-Control: no-store
		// when replayed.
		ReplayHeaders: append(slices.Clone(middleware.DefaultReplayHeaders), "Cache-Control"),
		Logger:        log,
		Observer:      prom.Observe,
		StoreObserver: prom.ObserveStore,
	}); err != nil {
		return fail(err)
	}

	// The POST route, built inside out; a request meets the layers in the
	// order of the package documentation: precheck, front door (body
	// rate, body read, work slot), signature, middleware, handler.
	post := s.idem.Handler(http.HandlerFunc(s.postFeatures))
	if verify != nil {
		post = verify.Handler(post) // the signature, over the body, before the claim
	}
	post = s.door.Handler(post)
	if verify != nil {
		post = verify.Precheck(post) // headers and URL only: before the body is read
	}

	// The routes.
	mux := http.NewServeMux()
	mux.Handle("POST /features", post)
	mux.Handle("GET /features/{id}", http.HandlerFunc(s.getFeature))
	mux.Handle("GET /metrics", metricsHandler(reg))
	mux.Handle("GET /healthz", health(probe(s.stores.keys)))
	s.handler = logRefusals(problemRoutes(mux), log, keyHeader, s.door.Client)
	return s, nil
}

// Handler returns the service's routes.
func (s *Service) Handler() http.Handler { return s.handler }

// FrontDoor returns the service's front door: serve [Service.Handler] on
// its Listener, through its Server.
func (s *Service) FrontDoor() *frontdoor.Door { return s.door }

// Admin returns the key store's adminhttp.Admin (every store the service
// opens has it), for an operator's listener: see keystore/adminhttp.
func (s *Service) Admin() (adminhttp.Admin, bool) {
	a, ok := s.stores.keys.(adminhttp.Admin)
	return a, ok
}

// ShutdownTimeout is how long Shutdown may have to wait for the records and
// releases retried in the background: the lease plus the store's lease
// (middleware.Middleware.StoreLease), the longest they are kept.
func (s *Service) ShutdownTimeout() time.Duration { return s.lease + s.idem.StoreLease() }

// Shutdown waits for the records and releases the middleware is still
// retrying in the background, or for ctx to end (see
// middleware.Middleware.Shutdown). Call it after http.Server.Shutdown and
// before Close.
func (s *Service) Shutdown(ctx context.Context) error { return s.idem.Shutdown(ctx) }

// Close closes the stores.
func (s *Service) Close() { s.stores.close() }

// Redacted returns a store URL fit to print: without its password.
func Redacted(storeURL string) string {
	if u, err := url.Parse(storeURL); err == nil && u.User != nil {
		return u.Redacted()
	}
	return storeURL
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
