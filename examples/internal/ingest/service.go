// Package ingest is the receiving service of examples/ingest and
// examples/chaos: GeoJSON features posted with an idempotency key are
// upserted by id exactly once, behind the geoidem middleware, on the store a
// URL names.
package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// Config configures a Service. Zero fields mean the defaults shown.
type Config struct {
	// Store names the key store and feature repository (see open): "memory"
	// (default), redis://host:port/db, redis://h1:p1,h2:p2 (Cluster) or
	// postgres://….
	Store string
	// Lease is the middleware's lease (middleware.DefaultLease).
	Lease time.Duration
	// StoreTimeout is the middleware's store timeout (middleware.DefaultStoreTimeout).
	StoreTimeout time.Duration
	// RetryAfter is the middleware's Retry-After for 409 and 503
	// (middleware.DefaultRetryAfter).
	RetryAfter time.Duration
	// HandlerTimeout is the middleware's Config.HandlerTimeout: when
	// positive, a feature write still running after it is canceled and
	// rolled back, answered 503 and its key released. Default 0: a write
	// runs to its end (the lease bounds it), whether or not its client
	// waits.
	HandlerTimeout time.Duration
	// MaxBodyBytes bounds request bodies (middleware.DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// WebhookSecrets, if any, make the service accept only Standard
	// Webhooks signed with one of them, verified before the key, then taken
	// from webhook-id, is claimed.
	WebhookSecrets []standardwebhooks.Secret
	// Validator checks bodies after the claim. Default: RFC 7946 validation
	// (geojson.RequestValidator), so geometry no retry can fix is 422.
	Validator middleware.Validator
	// KeyTable and FeaturesTable name the PostgreSQL tables
	// (pgstore.DefaultTable, "features"); RedisPrefix the Redis key prefix
	// (redisstore.DefaultKeyPrefix).
	KeyTable, FeaturesTable, RedisPrefix string
	// RedisDurability is what the Redis store accepts of the server's
	// persistence (redisstore.RefuseVolatile: it refuses a Redis that keeps
	// nothing across a restart); see redisstore.Durability.
	RedisDurability redisstore.Durability
	// RedisWaitReplicas is the Redis store's Config.WaitReplicas: how many
	// replicas must acknowledge each claim (default 0: none waited for).
	RedisWaitReplicas int
	// MaxFeatures and MaxFeatureBytes bound the in-memory feature store of
	// the memory and Redis modes (DefaultMaxFeatures, DefaultMaxFeatureBytes:
	// ids, feature bytes and applied keys). When a write does not fit it is
	// refused with 507 (feature-store-full, no Retry-After: no room frees
	// by itself) and its key
	// released; no stored feature is ever evicted. A request that alone
	// exceeds a bound is answered 422 (feature-rejected).
	MaxFeatures     int
	MaxFeatureBytes int64
	// OrderProperty names the Feature property that orders the updates of
	// one feature id (DefaultOrderProperty, observation_time): an RFC 3339
	// date-time. A feature older than the one stored under its id changes
	// nothing and is answered as stale (see the README, "The newest
	// observation wins"); a feature without the property is stored
	// whatever its time (last write wins); a value that is not an RFC 3339
	// date-time string is a 422 (observation-time-invalid).
	OrderProperty string
	// MaxInFlight and MaxInFlightBytes bound the POST requests and their
	// bytes in flight (middleware.Admission, in front of the signature
	// check and the middleware, keyed by the remote address): defaults
	// middleware.DefaultMaxInFlight (64) and DefaultMaxInFlightBytes (16
	// MiB), a client kept to a quarter once three quarters are held;
	// negative turns the bound off.
	MaxInFlight      int
	MaxInFlightBytes int64
	// WriteDelay pauses each feature write before it commits, widening the
	// window a crash test aims at. Default 0.
	WriteDelay time.Duration
	// Logger receives the middleware's and the service's logs (default: none).
	Logger *slog.Logger
	// RunLog, if set, receives a line for every feature a handler run is
	// about to write, before the write (run "id"), and for every feature
	// whose write the in-memory store's per-key guard then skipped
	// (skip "id"), each run's lines in one Write. It is how a crash test
	// counts runs across processes: a file opened with O_APPEND keeps the
	// lines of a process killed with SIGKILL, whose in-process counts
	// (Service.Runs) die with it; ReadRunLog reads it. When a write to it
	// fails, the run stops before the feature write and is answered 503
	// (the key is released), since a run the log missed would make a count
	// pass wrongly.
	RunLog io.Writer
	// CountRuns keeps, in memory, the count of handler runs per feature id
	// that Service.Runs returns as Attempts (tests and examples/chaos). Off
	// by default: the map grows with every id the service ever writes. The
	// totals in /metrics are kept either way.
	CountRuns bool
}

// Service is the receiving service: Handler serves POST /features,
// GET /features/{id}, GET /metrics and GET /healthz. It counts its handler
// runs per feature id ([Service.Runs], Config.RunLog, and two totals in
// /metrics: geoidem_feature_runs_total and
// geoidem_feature_write_skips_total).
type Service struct {
	backend *backend
	handler http.Handler
	metrics *metrics
	runs    *runCounter
	idem    *middleware.Middleware
	lease   time.Duration         // the middleware's Config.Lease
	admit   *middleware.Admission // nil: no bound in flight
}

// New opens the store cfg names and builds the service on it.
func New(ctx context.Context, cfg Config) (*Service, error) {
	m, err := newMetrics()
	if err != nil {
		return nil, err
	}
	runs := newRunCounter(m.reg, cfg.RunLog, cfg.CountRuns)
	be, err := open(ctx, cfg.Store, backendOptions{
		KeyTable: orDefault(cfg.KeyTable, pgstore.DefaultTable), FeaturesTable: orDefault(cfg.FeaturesTable, "features"),
		RedisPrefix: orDefault(cfg.RedisPrefix, redisstore.DefaultKeyPrefix), RedisDurability: cfg.RedisDurability, Logger: cfg.Logger,
		RedisWaitReplicas: cfg.RedisWaitReplicas,
		MaxFeatures:       cfg.MaxFeatures, MaxFeatureBytes: cfg.MaxFeatureBytes,
		OnSkip: runs.skip,
	})
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	store := be.store
	validator := cfg.Validator
	if validator == nil {
		validator = geojson.RequestValidator{}
	}
	keyHeader := middleware.DefaultKeyHeader
	if len(cfg.WebhookSecrets) > 0 {
		keyHeader = standardwebhooks.HeaderID
	}
	idem, err := middleware.New(store, middleware.Config{
		KeyHeader: keyHeader,
		// Each remote address has its share of the key store (memstore:
		// a quarter), so that one client's flood of keys cannot deny the
		// others.
		Client:         remoteHost,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		Lease:          cfg.Lease,
		StoreTimeout:   cfg.StoreTimeout,
		RetryAfter:     cfg.RetryAfter,
		HandlerTimeout: cfg.HandlerTimeout,
		Validator:      validator,
		// The handler's own problem documents keep Cache-Control: no-store
		// when replayed.
		ReplayHeaders: append(slices.Clone(middleware.DefaultReplayHeaders), "Cache-Control"),
		Logger:        log,
		Observer:      m.prom.Observe,
		StoreObserver: m.prom.ObserveStore,
	})
	if err != nil {
		be.close()
		return nil, err
	}
	retryAfter := cfg.RetryAfter
	if retryAfter <= 0 {
		retryAfter = middleware.DefaultRetryAfter
	}
	post := idem.Handler(postFeatures(be.repo, runs, cfg.WriteDelay, retryAfter, log, cfg.OrderProperty))
	if len(cfg.WebhookSecrets) > 0 {
		// Verify before the claim: a forged request must not burn a key.
		v, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{Secrets: cfg.WebhookSecrets, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log})
		if err != nil {
			be.close()
			return nil, err
		}
		post = v.Handler(post)
	}
	var admit *middleware.Admission
	if cfg.MaxInFlight >= 0 && cfg.MaxInFlightBytes >= 0 {
		// Outermost: a request over the bounds is answered before anything
		// reads its body.
		admit, err = middleware.NewAdmission(middleware.AdmissionConfig{
			MaxInFlight: cfg.MaxInFlight, MaxInFlightBytes: cfg.MaxInFlightBytes,
			MaxBodyBytes: cfg.MaxBodyBytes, RetryAfter: cfg.RetryAfter, Logger: log,
		})
		if err != nil {
			be.close()
			return nil, err
		}
		post = admit.Handler(post)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /features", post)
	mux.Handle("GET /features/{id}", getFeature(be.repo))
	mux.Handle("GET /metrics", m.handler())
	mux.Handle("GET /healthz", health(pinger(store, be.ping)))
	lease := cfg.Lease
	if lease <= 0 {
		lease = middleware.DefaultLease
	}
	return &Service{backend: be, handler: problemRoutes(mux), metrics: m, runs: runs, idem: idem, lease: lease, admit: admit}, nil
}

// Handler returns the service's routes.
func (s *Service) Handler() http.Handler { return s.handler }

// Admission returns the POST route's bound in flight, or nil when it is off.
func (s *Service) Admission() *middleware.Admission { return s.admit }

// Outcomes returns how many requests ended with each middleware outcome.
func (s *Service) Outcomes() map[middleware.Outcome]int {
	return s.metrics.outcomes()
}

// Writes returns, for every stored feature id, how many times it was
// written. It is not the proof that no delivery ran twice: the in-memory
// feature store skips a second write of a key it has seen, so a handler
// run twice writes once; [Service.Runs] counts the runs.
func (s *Service) Writes(ctx context.Context) (map[string]int, error) {
	return s.backend.repo.writes(ctx)
}

// Close closes the store.
func (s *Service) Close() { s.backend.close() }

// ShutdownTimeout is how long Shutdown may have to wait for the records and
// releases retried in the background: the lease plus the store's lease
// (middleware.Middleware.StoreLease), the longest they are kept.
func (s *Service) ShutdownTimeout() time.Duration { return s.lease + s.idem.StoreLease() }

// Shutdown waits for the records and releases the middleware is still
// retrying in the background, or for ctx to end (see
// middleware.Middleware.Shutdown). Call it after http.Server.Shutdown and
// before Close.
func (s *Service) Shutdown(ctx context.Context) error { return s.idem.Shutdown(ctx) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Redacted returns a store URL fit to print: without its password.
func Redacted(storeURL string) string {
	if u, err := url.Parse(storeURL); err == nil && u.User != nil {
		return u.Redacted()
	}
	return storeURL
}

// postFeatures is the ingest handler. It works from the document the
// validator decoded (middleware.Decoded): no second read of the body and no
// second parse. A store error is answered by the rule of [Transient]: 503
// with Retry-After (the key is released, the sender retries) or 422
// (recorded: no retry can fix it). Just before the write, runs counts the
// run for each feature (nil: not counted). orderProperty orders the
// updates of an id ("": DefaultOrderProperty).
func postFeatures(repo repository, runs *runCounter, writeDelay, retryAfter time.Duration, log *slog.Logger, orderProperty string) http.Handler {
	orderProperty = orDefault(orderProperty, DefaultOrderProperty)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := middleware.Decoded[*geojson.Document](r.Context())
		if !ok {
			// A Config.Validator that does not decode: parse here, with
			// the same strict parser.
			body, err := io.ReadAll(r.Body) // bounded by the middleware
			if err != nil {
				writeProblem(w, http.StatusBadRequest, problemBodyUnreadable, "Body unreadable", err.Error(), 0)
				return
			}
			if doc, err = geojson.DecodeDocument(body, geojson.Options{}); err != nil {
				writeHTTPProblem(w, err)
				return
			}
		}
		fs, err := featuresOf(doc, orderProperty)
		if e, ok := isObservationTimeError(err); ok {
			writeObservationTimeProblem(w, e, orderProperty)
			return
		}
		switch {
		case errors.Is(err, errNotFeatures):
			writeProblem(w, http.StatusUnprocessableEntity, problemNotFeatures, "Not a Feature or FeatureCollection", err.Error(), 0)
			return
		case err != nil:
			writeProblem(w, http.StatusUnprocessableEntity, problemIDMissing, "Feature id missing", err.Error(), 0)
			return
		}
		if err := runs.run(fs); err != nil {
			log.LogAttrs(r.Context(), slog.LevelError, "run not counted; nothing written", heldKey(r), slog.Any("error", err))
			writeProblem(w, http.StatusServiceUnavailable, problemStoreUnavailable, "Feature store unavailable",
				"The feature store failed; nothing was stored. Retry later with the same key.", retryAfter)
			return
		}
		rec, err := repo.upsert(withWriteDelay(r.Context(), writeDelay), fs, func(stale []bool) keystore.Record { return answerFor(fs, stale) })
		switch {
		case errors.Is(err, errStoreFull):
			// The in-memory store evicts nothing, so no room frees by
			// itself: no Retry-After that would promise some. 507 is a
			// 5xx, so the key is released for a retry once an operator
			// has made room.
			writeProblem(w, http.StatusInsufficientStorage, problemStoreFull, "Feature store full",
				"The in-memory feature store is full and evicts nothing, so no room frees by itself; nothing was stored. Retry with the same key once the operator has made room (a larger -max-features or -max-feature-bytes, or a restart).", 0)
			return
		case err != nil && Transient(err):
			// 5xx: the middleware releases the key, so the sender's retry runs again.
			log.LogAttrs(r.Context(), slog.LevelWarn, "features not stored; the sender will retry", heldKey(r), slog.Any("error", err))
			writeProblem(w, http.StatusServiceUnavailable, problemStoreUnavailable, "Feature store unavailable",
				"The feature store failed; nothing was stored. Retry later with the same key.", retryAfter)
			return
		case err != nil:
			// Permanent: recorded, so every retry is answered the same.
			log.LogAttrs(r.Context(), slog.LevelError, "features refused permanently; answered 422 and recorded", heldKey(r), slog.Any("error", err))
			writeProblem(w, http.StatusUnprocessableEntity, problemRejected, "Features refused", refusal(err), 0)
			return
		}
		for k, vs := range rec.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.StatusCode)
		_, _ = w.Write(rec.Body)
	})
}

// heldKey is the request's stored key (a hash, never the raw key) for logs.
func heldKey(r *http.Request) slog.Attr {
	if hold, ok := keystore.HoldFromContext(r.Context()); ok {
		return slog.String("key", hold.Key)
	}
	return slog.String("key", "")
}

func getFeature(repo repository) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok, err := repo.get(r.Context(), r.PathValue("id"))
		switch {
		case err != nil:
			writeProblem(w, http.StatusServiceUnavailable, problemStoreUnavailable, "Feature store unavailable",
				"The feature store failed; try again later.", time.Second)
		case !ok:
			writeProblem(w, http.StatusNotFound, problemNotFound, "No such feature", "No feature has the id "+strconv.Quote(r.PathValue("id"))+".", 0)
		default:
			w.Header().Set("Content-Type", "application/geo+json")
			_, _ = w.Write(f)
		}
	})
}

// remoteHost is the client identity of the key store's shares: the remote
// address's host.
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
