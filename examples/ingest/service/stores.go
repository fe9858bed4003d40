package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// stores is what Config.Store selects: the key store, the feature store,
// and what closes them.
type stores struct {
	keys     keystore.Store
	features FeatureStore
	close    func()
	metrics  []prometheus.Collector // the stores' own, for GET /metrics
}

// open returns the stores cfg.Store names (see New).
func open(ctx context.Context, cfg Config, log *slog.Logger) (*stores, error) {
	switch u := cfg.Store; {
	case u == "" || u == "memory":
		keys := memstore.New(memstore.Config{
			MaxEntries: orDefault(cfg.MaxKeys, DefaultMaxKeys), ClientKeys: cfg.ClientKeys, ClientWindow: cfg.ClientWindow,
			EvictAfter: cfg.EvictAfter, Logger: log,
		})
		evicted := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "geoidem_store_evicted_total",
			Help: "Completed records the memory store evicted before the end of their retention to make room for new keys, being older than -evict-after; a retry of their requests runs again."},
			func() float64 { return float64(keys.Stats().Evicted) })
		return &stores{keys: keys, features: newMemoryFeatures(cfg.MaxFeatures, cfg.MaxFeatureBytes),
			close: func() {}, metrics: []prometheus.Collector{evicted}}, nil
	case strings.HasPrefix(u, "redis://") || strings.HasPrefix(u, "rediss://"):
		return openRedis(ctx, cfg, log)
	case strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://"):
		return openPostgres(ctx, cfg)
	}
	return nil, fmt.Errorf("store %q: want memory, redis://… or postgres://…", Redacted(cfg.Store))
}

// redisTimeout bounds every Redis command; the middleware's own store
// timeout (2 s) is longer, so a stalled Redis surfaces as a command error.
const redisTimeout = time.Second

// startTimeout bounds what opening a store may take: reaching it, and
// PostgreSQL's migrations.
const startTimeout = 30 * time.Second

// quiet turns off go-redis's maintenance notifications, whose handshake
// logs a line on every Redis that does not know them.
var quiet = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}

// resp2 is the protocol the clients speak (a single node's URL may name
// another: ?protocol=3): on RESP3, go-redis peeks at the socket for push
// notifications around every command (two system calls, six allocations),
// which the store never uses. See redisstore's package documentation.
const resp2 = 2

func openRedis(ctx context.Context, cfg Config, log *slog.Logger) (*stores, error) {
	u, err := url.Parse(cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// newClient returns a client of the URL; maxRetries is its MaxRetries.
	var newClient func(maxRetries int) redis.UniversalClient
	if strings.Contains(u.Host, ",") { // a list of seed nodes: a Cluster
		copts := redis.ClusterOptions{Addrs: strings.Split(u.Host, ",")}
		if u.User != nil {
			copts.Username = u.User.Username()
			copts.Password, _ = u.User.Password()
		}
		copts.DialTimeout, copts.ReadTimeout, copts.WriteTimeout = redisTimeout, redisTimeout, redisTimeout
		copts.ContextTimeoutEnabled = true
		copts.MaintNotificationsConfig = quiet
		copts.Protocol = resp2
		newClient = func(maxRetries int) redis.UniversalClient {
			o := copts
			o.MaxRetries = maxRetries
			return redis.NewClusterClient(&o)
		}
	} else {
		ropts, err := redis.ParseURL(cfg.Store)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		ropts.DialTimeout, ropts.ReadTimeout, ropts.WriteTimeout = redisTimeout, redisTimeout, redisTimeout
		ropts.ContextTimeoutEnabled = true
		ropts.MaintNotificationsConfig = quiet
		if ropts.Protocol == 0 {
			ropts.Protocol = resp2
		}
		newClient = func(maxRetries int) redis.UniversalClient {
			o := *ropts
			o.MaxRetries = maxRetries
			return redis.NewClient(&o)
		}
	}
	// Fail now on a Redis that cannot be used (nothing listening, a
	// database it does not have, credentials it refuses), as PostgreSQL
	// does: redisstore.New only warns when it cannot read the server's
	// configuration, and every request would then be a 503. One try, no
	// retries: the cause is reported at once.
	probe := newClient(-1)
	pctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	err = probe.Ping(pctx).Err()
	probe.Close()
	if err != nil {
		return nil, fmt.Errorf("store %s: Redis cannot be used: %w", Redacted(cfg.Store), err)
	}
	client := newClient(0) // go-redis's default retries
	maxMemory, err := redisMaxMemory(ctx, client, cfg.RedisMaxMemory, log)
	if err != nil {
		client.Close()
		return nil, err
	}
	keys, err := redisstore.New(client, redisstore.Config{
		KeyPrefix: orDefault(cfg.RedisPrefix, redisstore.DefaultKeyPrefix), Durability: cfg.RedisDurability,
		Logger: log, WaitReplicas: cfg.RedisWaitReplicas, WaitTimeout: redisWaitTimeout,
		ClientKeys: clientKeys(cfg), ClientWindow: cfg.ClientWindow, MaxMemory: maxMemory,
	})
	if err != nil {
		client.Close()
		return nil, err
	}
	return &stores{
		keys: keys,
		// The features where the keys are: a restart keeps both; with
		// WaitReplicas, a feature acknowledged is on that many replicas,
		// as its key's claim is.
		features: &redisFeatures{client: client, prefix: orDefault(cfg.RedisPrefix, redisstore.DefaultKeyPrefix),
			waitReplicas: cfg.RedisWaitReplicas, waitTimeout: redisWaitTimeout},
		close: func() { client.Close() },
	}, nil
}

// redisWaitTimeout is how long a key's claim and a feature's write wait
// for -redis-wait-replicas to acknowledge them: one bound for both.
const redisWaitTimeout = 500 * time.Millisecond

func openPostgres(ctx context.Context, cfg Config) (*stores, error) {
	pool, err := pgxpool.New(ctx, cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	fail := func(err error) (*stores, error) { pool.Close(); return nil, err }
	ictx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	keys, err := pgstore.New(ictx, pool, pgstore.Config{Table: cfg.KeyTable, ClientKeys: clientKeys(cfg), ClientWindow: cfg.ClientWindow,
		MaxKeys: max(0, orDefault(cfg.PGMaxKeys, DefaultPGMaxKeys))})
	if err != nil {
		return fail(err)
	}
	features := &postgisFeatures{keys: keys, pool: pool, table: pgx.Identifier{orDefault(cfg.FeaturesTable, DefaultFeaturesTable)}.Sanitize()}
	if err := features.migrate(ictx); err != nil {
		keys.Close()
		return fail(err)
	}
	return &stores{
		keys:     keys,
		features: features,
		close:    func() { keys.Close(); pool.Close() },
	}, nil
}

// clientKeys is the Redis and PostgreSQL stores' Config.ClientKeys:
// cfg.ClientKeys, its default, or 0 (no bound) when negative.
func clientKeys(cfg Config) int {
	if cfg.ClientKeys < 0 {
		return 0
	}
	return orDefault(cfg.ClientKeys, DefaultClientKeys)
}

// redisMaxMemory is the Redis store's Config.MaxMemory for the setting v
// (Config.RedisMaxMemory): v when positive, none when negative, and by
// default nine tenths of the server's maxmemory, or none, said in the
// log, when the server sets no maxmemory.
func redisMaxMemory(ctx context.Context, client redis.UniversalClient, v int64, log *slog.Logger) (int64, error) {
	switch {
	case v > 0:
		return v, nil
	case v < 0:
		return 0, nil
	}
	ictx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	bound, maxmemory, err := redisstore.SuggestedMaxMemory(ictx, client)
	if err != nil {
		return 0, fmt.Errorf("store: reading Redis's maxmemory: %w", err)
	}
	if bound == 0 {
		log.Warn("Redis sets no maxmemory: nothing bounds what all clients together store but the host's memory; set maxmemory on the server (new keys are then refused 503 store-full at nine tenths of it) or a bound of your own")
		return 0, nil
	}
	log.Info("new keys refused 503 store-full at nine tenths of Redis's maxmemory", "max_memory", bound, "maxmemory", maxmemory)
	return bound, nil
}
