package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// storeSetup is a run's own corner of a store and the means to break it.
type storeSetup struct {
	kind storeKind
	// cfg configures the receiver: its store URL (through cut, if any)
	// and its own prefix or tables.
	cfg service.Config
	// writeDelay pauses each feature write of the receiver before it
	// commits (-write-delay).
	writeDelay time.Duration
	// direct is the store URL without the cut in between, for the
	// harness's own connections (PostgreSQL: another application_name).
	direct string
	// appName is the receiver's PostgreSQL application_name.
	appName string
	cut     *testkit.Cutter // nil without -store-faults and -stall-for
}

// setupStore names the run's prefix or tables after suffix and, with
// faults, puts a testkit.Cutter between the receiver and the store.
func setupStore(o options, suffix string) (*storeSetup, error) {
	s := &storeSetup{kind: o.kind(), cfg: service.Config{Store: "memory", Lease: lease, StoreTimeout: storeTimeout}, writeDelay: o.writeDelay}
	if s.kind == memoryStore {
		return s, nil
	}
	u, err := url.Parse(o.store)
	if err != nil {
		return nil, err
	}
	receiverURL := *u
	if o.storeFaults || o.stallFor > 0 {
		if s.cut, err = testkit.NewCutter(u.Host); err != nil {
			return nil, err
		}
		receiverURL.Host = s.cut.Addr()
	}
	switch s.kind {
	case redisStore:
		s.cfg.RedisPrefix = "geoidem-chaos-" + suffix + ":"
		// The harness measures what faults do, on test servers: it accepts
		// a Redis that keeps nothing across a restart.
		s.cfg.RedisDurability = redisstore.AcceptVolatile
		s.cfg.RedisWaitReplicas = o.waitReplicas
		s.direct = u.String()
	case postgresStore:
		s.cfg.KeyTable, s.cfg.FeaturesTable = "chaos_keys_"+suffix, "chaos_features_"+suffix
		s.appName = "geoidem-chaos-" + suffix
		q := receiverURL.Query()
		q.Set("application_name", s.appName)
		receiverURL.RawQuery = q.Encode()
		d := *u
		q = d.Query()
		q.Set("application_name", s.appName+"-harness")
		d.RawQuery = q.Encode()
		s.direct = d.String()
	}
	s.cfg.Store = receiverURL.String()
	return s, nil
}

// harnessConfig is the receiver's Config for the harness's own service
// on the same tables: connected directly, under another application_name.
func (s *storeSetup) harnessConfig() service.Config {
	cfg := s.cfg
	cfg.Store = s.direct
	return cfg
}

// terminate kills every PostgreSQL connection of the receiver and returns
// how many it killed.
func (s *storeSetup) terminate(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, s.direct)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()) t`, s.appName).Scan(&n)
	return n, err
}

// cleanup removes the run's prefix or tables and closes the cut.
func (s *storeSetup) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if s.cut != nil {
		errs = append(errs, s.cut.Close())
	}
	switch s.kind {
	case redisStore:
		errs = append(errs, dropRedisPrefix(ctx, s.direct, s.cfg.RedisPrefix))
	case postgresStore:
		conn, err := pgx.Connect(ctx, s.direct)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		defer conn.Close(ctx)
		// The feature table first: the service's own; then every object
		// of the key store, dropped by the package that names them.
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{s.cfg.FeaturesTable}.Sanitize()); err != nil {
			errs = append(errs, fmt.Errorf("dropping %s: %w", s.cfg.FeaturesTable, err))
		}
		errs = append(errs, pgstore.Drop(ctx, conn, pgstore.Config{Table: s.cfg.KeyTable}))
	}
	return errors.Join(errs...)
}

// dropRedisPrefix deletes every key under prefix, on one Redis or on every
// master of a Cluster (a URL with a list of nodes).
func dropRedisPrefix(ctx context.Context, storeURL, prefix string) error {
	u, err := url.Parse(storeURL)
	if err != nil {
		return err
	}
	if !strings.Contains(u.Host, ",") {
		opts, err := redis.ParseURL(storeURL)
		if err != nil {
			return err
		}
		c := redis.NewClient(opts)
		defer c.Close()
		return testkit.DeletePrefix(ctx, c, prefix)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(u.Host, ",")})
	defer c.Close()
	return testkit.DeletePrefix(ctx, c, prefix)
}
