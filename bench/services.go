package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// feature is the request body of sections 1 and 2: the small Feature of the
// middleware's own benchmarks.
const feature = `{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"name":"a"}}`

// ingestBody is what the bare handler answers for a body.
func ingestBody(body []byte) []byte {
	return []byte(`{"stored":["f1"],"bytes":` + strconv.Itoa(len(body)) + `}`)
}

// ingestHandler is the bare handler: it reads the body and answers a small
// JSON document, as a minimal ingest endpoint would (the same as
// middleware/bench_test.go's).
var ingestHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(ingestBody(body))
})

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// services are the Redis and PostgreSQL resources of one section: a Redis
// key prefix and PostgreSQL tables with random names, removed by close.
type services struct {
	o      *options
	id     string // random, in every name below
	redis  *redis.Client
	prefix string // Redis key prefix of everything this run writes
	pool   *pgxpool.Pool
	table  string // pgstore's table
	hand   string // the hand-written baseline's table (quoted)
}

// pgPoolSize is the connection limit of the pool shared by pgstore and the
// hand-written baseline.
const pgPoolSize = 16

func openServices(ctx context.Context, o *options) (*services, error) {
	sv := &services{o: o, id: randomHex(6)}
	sv.prefix = "geoidem-bench-" + sv.id + ":"
	sv.redis = redis.NewClient(&redis.Options{Addr: o.redisAddr, ContextTimeoutEnabled: true})
	if err := sv.redis.Ping(ctx).Err(); err != nil {
		sv.redis.Close()
		return nil, fmt.Errorf("redis at %s: %w", o.redisAddr, err)
	}
	cfg, err := pgxpool.ParseConfig(o.postgresURL)
	if err != nil {
		sv.redis.Close()
		return nil, err
	}
	cfg.MaxConns = pgPoolSize
	if sv.pool, err = pgxpool.NewWithConfig(ctx, cfg); err == nil {
		err = sv.pool.Ping(ctx)
	}
	if err != nil {
		sv.close(ctx)
		return nil, fmt.Errorf("postgres at %s: %w", o.postgresURL, err)
	}
	sv.table = "geoidem_bench_" + sv.id
	sv.hand = pgx.Identifier{"geoidem_bench_hand_" + sv.id}.Sanitize()
	if _, err := sv.pool.Exec(ctx, `CREATE TABLE `+sv.hand+` (
		key text COLLATE "C" PRIMARY KEY,
		expires_at timestamptz NOT NULL,
		status integer,
		body bytea)`); err != nil {
		sv.close(ctx)
		return nil, fmt.Errorf("postgres: create baseline table: %w", err)
	}
	// The same expiry index as pgstore's table, which any store that prunes
	// expired keys needs: its upkeep is part of the inherent cost.
	if _, err := sv.pool.Exec(ctx, `CREATE INDEX ON `+sv.hand+` (expires_at)`); err != nil {
		sv.close(ctx)
		return nil, fmt.Errorf("postgres: create baseline index: %w", err)
	}
	return sv, nil
}

// redisStore returns a redisstore.Store under this run's prefix.
// openStores opens the services and a Redis and a PostgreSQL key store on
// them. The caller closes the pgstore, then the services.
func openStores(ctx context.Context, o *options) (*services, *redisstore.Store, *pgstore.Store, error) {
	sv, err := openServices(ctx, o)
	if err != nil {
		return nil, nil, nil, err
	}
	rs, err := sv.redisStore()
	if err != nil {
		return nil, nil, nil, errors.Join(err, sv.close(ctx))
	}
	ps, err := sv.pgStore(ctx)
	if err != nil {
		return nil, nil, nil, errors.Join(err, sv.close(ctx))
	}
	return sv, rs, ps, nil
}

func (sv *services) redisStore() (*redisstore.Store, error) {
	// The bench's Redis runs without persistence: it measures speed, and a
	// restart during a run would lose only the run's own keys.
	return redisstore.New(sv.redis, redisstore.Config{KeyPrefix: sv.prefix + "store:", Durability: redisstore.AcceptVolatile})
}

// pgStore returns a pgstore.Store on this run's fresh table, without a
// janitor.
func (sv *services) pgStore(ctx context.Context) (*pgstore.Store, error) {
	return pgstore.New(ctx, sv.pool, pgstore.Config{Table: sv.table, PruneInterval: -1})
}

// close removes everything the run wrote and closes the clients.
func (sv *services) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	if sv.pool != nil {
		if sv.table != "" {
			if err := pgstore.Drop(ctx, sv.pool, pgstore.Config{Table: sv.table}); err != nil {
				errs = append(errs, err)
			}
		}
		if sv.hand != "" {
			if _, err := sv.pool.Exec(ctx, "DROP TABLE IF EXISTS "+sv.hand); err != nil {
				errs = append(errs, fmt.Errorf("drop %s: %w", sv.hand, err))
			}
		}
		sv.pool.Close()
	}
	if sv.redis != nil {
		errs = append(errs, testkit.DeletePrefix(ctx, sv.redis, sv.prefix), sv.redis.Close())
	}
	return errors.Join(errs...)
}

// Hand-written baselines: the bare handler making the store round trips
// itself, with none of the middleware's checks (no fingerprint, no scope, no
// lease renewal, no header filtering, no problem documents): the inherent
// cost of a remote store, against which the middleware's own cost shows.

const (
	handLease     = 30 * time.Second
	handRetention = 24 * time.Hour
	inFlightMark  = "-"
)

func handReply(w http.ResponseWriter, status int, body []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	w.Write(body)
}

// redisByHand claims with SET NX PX (with GET, so that a replay is one round
// trip too) and records with SET PX.
func (sv *services) redisByHand() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		body, err := io.ReadAll(r.Body)
		if key == "" || err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		ctx := r.Context()
		rkey := sv.prefix + "hand:{" + key + "}"
		old, err := sv.redis.SetArgs(ctx, rkey, inFlightMark, redis.SetArgs{Mode: "NX", TTL: handLease, Get: true}).Result()
		switch {
		case errors.Is(err, redis.Nil): // acquired
		case err != nil:
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		case old == inFlightMark:
			http.Error(w, "in flight", http.StatusConflict)
			return
		default:
			status, _ := strconv.Atoi(old[:3])
			handReply(w, status, []byte(old[3:]), true)
			return
		}
		resp := ingestBody(body)
		if err := sv.redis.Set(ctx, rkey, "201"+string(resp), handRetention).Err(); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		handReply(w, http.StatusCreated, resp, false)
	})
}

// pgByHand claims with INSERT … ON CONFLICT DO NOTHING (reading an existing
// row in the same statement, so that a replay is one round trip too) and
// records with UPDATE.
func (sv *services) pgByHand() http.Handler {
	claim := `WITH ins AS (
		INSERT INTO ` + sv.hand + ` (key, expires_at) VALUES ($1, now() + interval '30 seconds')
		ON CONFLICT DO NOTHING RETURNING true)
	SELECT EXISTS (SELECT 1 FROM ins), b.status, b.body
	FROM (VALUES (1)) one LEFT JOIN ` + sv.hand + ` b ON b.key = $1`
	complete := `UPDATE ` + sv.hand + ` SET status = $2, body = $3, expires_at = now() + interval '24 hours' WHERE key = $1`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		body, err := io.ReadAll(r.Body)
		if key == "" || err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		ctx := r.Context()
		var (
			acquired bool
			status   *int32
			stored   []byte
		)
		if err := sv.pool.QueryRow(ctx, claim, key).Scan(&acquired, &status, &stored); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		switch {
		case !acquired && status != nil:
			handReply(w, int(*status), stored, true)
			return
		case !acquired:
			http.Error(w, "in flight", http.StatusConflict)
			return
		}
		resp := ingestBody(body)
		if _, err := sv.pool.Exec(ctx, complete, key, http.StatusCreated, resp); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		handReply(w, http.StatusCreated, resp, false)
	})
}
