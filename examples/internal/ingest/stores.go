package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/newest"
)

// backend is what a -store URL selects: the key store, the feature
// repository, a health probe and what closes them.
type backend struct {
	store keystore.Store
	repo  repository
	ping  func(ctx context.Context) error
	close func()
}

// backendOptions shape a backend.
type backendOptions struct {
	KeyTable      string // PostgreSQL: the key store's table
	FeaturesTable string // PostgreSQL: the PostGIS feature table
	RedisPrefix   string // Redis: the key prefix
	// Redis: what the store accepts of the server's persistence, and the
	// logger of its checks' warnings.
	RedisDurability redisstore.Durability
	Logger          *slog.Logger
	// Redis: the store's Config.WaitReplicas.
	RedisWaitReplicas int

	MaxFeatures     int   // memory and Redis: the in-memory feature store's bound in features
	MaxFeatureBytes int64 // memory and Redis: its bound in bytes

	OnSkip func([]feature) // memory and Redis: told of every write the per-key guard skips
}

type writeDelayKey struct{}

// withWriteDelay asks a repository to pause for d after writing and before
// committing: it widens the window in which a crash test's SIGKILL finds a
// write done but not committed.
func withWriteDelay(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, writeDelayKey{}, d)
}

func pauseAfterWrite(ctx context.Context) {
	if d, ok := ctx.Value(writeDelayKey{}).(time.Duration); ok {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// open returns the backend named by a store URL:
//
//	memory                                 in-process keys and features (default)
//	redis://127.0.0.1:6379/0               keys in Redis, features in process
//	redis://h1:7000,h2:7001,h3:7002        the same on a Redis Cluster (any seed nodes)
//	postgres://user@host:5432/db           keys and PostGIS features in PostgreSQL, the
//	                                       feature write and the key's completion in one
//	                                       transaction
func open(ctx context.Context, storeURL string, opt backendOptions) (*backend, error) {
	switch {
	case storeURL == "" || storeURL == "memory":
		return &backend{store: new(memstore.Store), repo: newMemFeatures(opt.MaxFeatures, opt.MaxFeatureBytes, opt.OnSkip),
			ping: func(context.Context) error { return nil }, close: func() {}}, nil
	case strings.HasPrefix(storeURL, "redis://") || strings.HasPrefix(storeURL, "rediss://"):
		return openRedis(storeURL, opt)
	case strings.HasPrefix(storeURL, "postgres://") || strings.HasPrefix(storeURL, "postgresql://"):
		return openPostgres(ctx, storeURL, opt)
	}
	return nil, fmt.Errorf("store %q: want memory, redis://… or postgres://…", storeURL)
}

// redisTimeout bounds every Redis command; the middleware's own store
// timeout (2 s) is longer, so a stalled Redis surfaces as a command error.
const redisTimeout = time.Second

func openRedis(storeURL string, opt backendOptions) (*backend, error) {
	var client redis.UniversalClient
	u, err := url.Parse(storeURL)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if strings.Contains(u.Host, ",") { // a list of seed nodes: a Cluster
		copts := &redis.ClusterOptions{Addrs: strings.Split(u.Host, ",")}
		if u.User != nil {
			copts.Username = u.User.Username()
			copts.Password, _ = u.User.Password()
		}
		copts.DialTimeout, copts.ReadTimeout, copts.WriteTimeout = redisTimeout, redisTimeout, redisTimeout
		copts.ContextTimeoutEnabled = true
		client = redis.NewClusterClient(copts)
	} else {
		ropts, err := redis.ParseURL(storeURL)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		ropts.DialTimeout, ropts.ReadTimeout, ropts.WriteTimeout = redisTimeout, redisTimeout, redisTimeout
		ropts.ContextTimeoutEnabled = true
		client = redis.NewClient(ropts)
	}
	store, err := redisstore.New(client, redisstore.Config{KeyPrefix: opt.RedisPrefix, Durability: opt.RedisDurability, Logger: opt.Logger, WaitReplicas: opt.RedisWaitReplicas})
	if err != nil {
		client.Close()
		return nil, err
	}
	return &backend{
		store: store,
		repo:  newMemFeatures(opt.MaxFeatures, opt.MaxFeatureBytes, opt.OnSkip),
		ping:  func(ctx context.Context) error { return client.Ping(ctx).Err() },
		close: func() { client.Close() },
	}, nil
}

func openPostgres(ctx context.Context, storeURL string, opt backendOptions) (*backend, error) {
	pool, err := pgxpool.New(ctx, storeURL)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	fail := func(err error) (*backend, error) { pool.Close(); return nil, err }
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := pgstore.New(ictx, pool, pgstore.Config{Table: opt.KeyTable})
	if err != nil {
		return fail(err)
	}
	repo := &pgFeatures{pool: pool, keys: store, table: pgx.Identifier{opt.FeaturesTable}.Sanitize()}
	if err := repo.migrate(ictx); err != nil {
		store.Close()
		return fail(err)
	}
	return &backend{
		store: store,
		repo:  repo,
		ping:  pool.Ping,
		close: func() { store.Close(); pool.Close() },
	}, nil
}

// pgFeatures keeps features in a PostGIS table. Its upsert runs in the same
// transaction as the key's completion (pgstore.Store.InTx): a crash between
// the write and the record can neither lose the answer nor apply the write
// twice. The writes column counts how often a feature was written, so a
// test can prove that no delivery was applied twice.
//
// Each feature is one conditional upsert: ON CONFLICT (id) DO UPDATE …
// WHERE the stored observation is older (newest.PostgresCondition on the
// observed_at and feature columns), RETURNING a row only when it wrote.
// The row is locked and the condition evaluated on its latest committed
// version, so concurrent updates of one id keep the newest.
//
// The geometry column is a plain geometry with a CHECK on SRID 4326, so it
// takes 2D, 3D and mixed collections alike (geometry(Geometry, 4326)
// refuses Z); each geometry arrives as EWKB, encoded from the validator's
// go-geom value, never as GeoJSON text to parse again. The feature itself
// is kept as bytea, exactly the bytes received: jsonb would refuse the
// escape \u0000 and would reorder members and respell numbers.
type pgFeatures struct {
	pool  *pgxpool.Pool
	keys  *pgstore.Store
	table string // quoted
}

func (p *pgFeatures) migrate(ctx context.Context) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	// Replicas starting together must not race to create the extension.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7946)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS postgis`); err != nil {
		return fmt.Errorf("creating the postgis extension (is postgresql-15-postgis-3 installed?): %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+p.table+` (
		id         text PRIMARY KEY,
		geom       geometry CHECK (ST_SRID(geom) = 4326),
		feature    bytea NOT NULL,
		writes     integer NOT NULL DEFAULT 1,
		updated_at timestamptz NOT NULL DEFAULT now(),
		observed_at timestamptz
	)`); err != nil {
		return err
	}
	// A table of an earlier version has no observed_at: its features keep
	// NULL (no time), which any update supersedes.
	if _, err := tx.Exec(ctx, `ALTER TABLE `+p.table+` ADD COLUMN IF NOT EXISTS observed_at timestamptz`); err != nil {
		return err
	}
	// A table of an earlier version: geometry(Geometry, 4326) and jsonb.
	var featureType string
	if err := tx.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1::regclass AND attname = 'feature'`, p.table).Scan(&featureType); err != nil {
		return err
	}
	if featureType == "jsonb" {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+p.table+`
			ALTER COLUMN geom TYPE geometry USING geom::geometry,
			ADD CHECK (ST_SRID(geom) = 4326),
			ALTER COLUMN feature TYPE bytea USING convert_to(feature::text, 'UTF8')`); err != nil {
			return fmt.Errorf("migrating %s to geometry and bytea columns: %w", p.table, err)
		}
	}
	return tx.Commit(ctx)
}

func (p *pgFeatures) upsert(ctx context.Context, fs []feature, answer func(stale []bool) keystore.Record) (keystore.Record, error) {
	upsert := `INSERT INTO ` + p.table + ` AS stored (id, geom, feature, observed_at)
		VALUES ($1, ST_SetSRID(ST_GeomFromEWKB($2::bytea), 4326), $3::bytea, $4)
		ON CONFLICT (id) DO UPDATE SET geom = EXCLUDED.geom, feature = EXCLUDED.feature,
			observed_at = EXCLUDED.observed_at, writes = stored.writes + 1, updated_at = now()
		WHERE ` + newest.PostgresCondition("stored", "observed_at", "feature") + `
		RETURNING true`
	return p.keys.InTx(ctx, func(tx pgx.Tx) (keystore.Record, error) {
		var b pgx.Batch
		stale := make([]bool, len(fs))
		for i, f := range fs {
			var wkb []byte // SQL NULL for a null geometry
			if f.Geometry != nil {
				var err error
				if wkb, err = ewkbOf(f.Geometry); err != nil {
					return keystore.Record{}, err
				}
			}
			var observed any // SQL NULL: no time
			if !f.Observed.IsZero() {
				observed = f.Observed
			}
			b.Queue(upsert, f.ID, wkb, f.Raw, observed).QueryRow(func(row pgx.Row) error {
				var wrote bool
				err := row.Scan(&wrote)
				if errors.Is(err, pgx.ErrNoRows) {
					stale[i] = true // the stored observation is newer
					return nil
				}
				return err
			})
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return keystore.Record{}, err
		}
		pauseAfterWrite(ctx)
		return answer(stale), nil
	})
}

func (p *pgFeatures) writes(ctx context.Context) (map[string]int, error) {
	rows, err := p.pool.Query(ctx, `SELECT id, writes FROM `+p.table)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	return out, err
}

// effects are the writes column: it is incremented inside the handler's
// transaction, so only committed runs count, from every process on the
// table. There is no guard that skips a write.
func (p *pgFeatures) effects(ctx context.Context) (effects, skipped map[string]int, err error) {
	effects, err = p.writes(ctx)
	return effects, nil, err
}

func (p *pgFeatures) get(ctx context.Context, id string) ([]byte, bool, error) {
	var f []byte
	err := p.pool.QueryRow(ctx, `SELECT feature FROM `+p.table+` WHERE id = $1`, id).Scan(&f)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	return f, err == nil, err
}
