package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/middleware"
)

// The defaults of Config's zero fields; DefaultTable is exported for the
// SQL that reads the table.
const (
	DefaultTable         = "geoidem_keys"
	defaultPruneInterval = time.Minute
	defaultPruneBatch    = 1000
)

// abandonedGrace is how long a row outlives the end of its lease or
// retention before Prune deletes it. Claim ignores an expired row at once;
// keeping an abandoned in-flight row a little longer lets the claim that takes
// it over report keystore.Claim.TookOver.
const abandonedGrace = time.Minute

// Config configures a Store. Zero fields mean the documented defaults.
type Config struct {
	// Schema is the schema that holds the store's table, sequence and
	// migration table. It must exist. Default: the connection's current
	// schema (the first existing schema of its search_path, normally
	// "public").
	Schema string

	// Table is the name of the key table. The store also creates
	// Table+"_token_seq", Table+"_expires_at_idx", Table+"_migrations",
	// Table+"_client_shards" (the counts of ClientKeys; Table+"_clients"
	// holds them for earlier versions), the function Table+"_claim" (the
	// first statement of a claim) and the type of its rows,
	// Table+"_claim_row".
	// Any name is accepted and always quoted (case and punctuation are
	// kept); it must be valid UTF-8, without NUL, at most 48 bytes. Default
	// DefaultTable.
	Table string

	// SkipMigrate, if true, stops New from running Migrate: the schema is
	// then the operator's job (call Store.Migrate from a deploy step).
	SkipMigrate bool

	// PruneInterval is how often the janitor started by New calls Prune.
	// Default one minute; negative: no janitor (call Prune
	// yourself).
	PruneInterval time.Duration

	// PruneBatch is the number of rows one pruning statement deletes at
	// most. Default 1,000.
	PruneBatch int

	// Logger receives the janitor's errors. Default: discard.
	Logger *slog.Logger

	// Observer, if set, is called after each CompleteTx (and so each
	// completion InTx makes) with Op middleware.OpComplete, the statement's
	// latency and its error: the completions made in the handler's
	// transaction, which the middleware does not make. The calls the
	// middleware makes (Claim, Extend, Complete, Release) are reported to
	// its own Config.StoreObserver. It is called synchronously and must be
	// fast and safe for concurrent use.
	Observer func(middleware.StoreCall)

	// ClientKeys, when positive, bounds the new keys one client
	// (keystore.ClaimArgs.Client; the middleware's Config.Client) acquires
	// in a window of ClientWindow that starts with its first: past it, a
	// Claim of a new key for the client fails with a *keystore.FullError
	// whose Client is set and whose RetryAfter is the rest of the window,
	// inserting nothing. The count is split over up to 16 rows per client
	// in the unlogged table Table+"_client_shards", read and written by
	// the claim's own statement, so every replica shares it; a crash of
	// the database empties it (every count starts again). Replays, keys in
	// flight, and keys released or expired and claimed again never count,
	// and are never refused. Claims of one client that run at once do not
	// wait for each other's count, and may overshoot the bound by their
	// number less one (each reads the others' counts before it inserts);
	// claims one after the other are held to it exactly.
	// Claims without a client are not bounded. Default 0: no bound.
	ClientKeys int

	// ClientWindow is the window of ClientKeys, in whole microseconds.
	// Default one hour.
	ClientWindow time.Duration

	// MaxKeys, when positive, bounds the rows the table holds, whatever
	// their clients: keys in flight, records, and rows ended and not yet
	// pruned. While the server's statistics count MaxKeys live rows or
	// more, a Claim of a key with no row fails with a *keystore.FullError
	// whose Client is not set (the middleware's 503 store-full),
	// inserting nothing, and whose RetryAfter is when the janitor can
	// delete the table's earliest-ending row: its expiry, plus the
	// minute's grace, plus one PruneInterval. Claims of keys with a row
	// (replays, keys in flight, ended ones to take over) are answered as
	// usual, after one more statement while full. The count is sampled
	// at most once a second, in the background of claims (a Claim pays a
	// few atomic loads for it), from pg_stat_user_tables, which trails the
	// table by a second or so under load and up to about ten seconds when
	// sessions go idle: set MaxKeys below what the disk holds by what
	// arrives meanwhile. Default 0: no bound.
	MaxKeys int64
}

// defaultClientWindow is the window of Config.ClientKeys when
// Config.ClientWindow is zero.
const defaultClientWindow = time.Hour

// Store is a [keystore.Store] on a PostgreSQL table, reached through a
// [pgxpool.Pool]. It is safe for concurrent use by many goroutines and many
// processes sharing the table. Create it with New and stop its janitor with
// Close.
type Store struct {
	pool *pgxpool.Pool
	// typedArgs: the pool's statements are described before they run
	// (pgx's default exec mode, or the description cache), so arguments
	// can be passed as pgtype valuers (see params).
	typedArgs bool
	claims    claimQueue
	completes batchQueue[*completeWaiter]
	names     names
	sql       statements
	lockKey   int64
	batch     int
	// clientKeys is Config.ClientKeys (0: no bound), clientWindow
	// Config.ClientWindow in microseconds.
	clientKeys   int32
	clientWindow int64
	log          *slog.Logger
	observe      func(middleware.StoreCall)
	room         room // Config.MaxKeys's samples

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

var (
	_ keystore.Store  = (*Store)(nil)
	_ keystore.Pinger = (*Store)(nil)
)

// Ping implements keystore.Pinger: one round trip on a connection of the
// store's pool. It touches no key.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return storeErr(ctx, "ping", err)
	}
	return nil
}

// New returns a Store on pool's database. Unless cfg.SkipMigrate is set it
// first runs Migrate, which is safe while other replicas do the same. Unless
// cfg.PruneInterval is negative it starts a janitor goroutine that prunes
// expired rows every interval until Close. The pool stays the caller's: Close
// does not close it.
//
// The store's statements work under any default_transaction_isolation of
// the pool's sessions: each runs as a transaction of its own, and a
// serialization failure (SQLSTATE 40001), which REPEATABLE READ or
// SERIALIZABLE produce when claims of one key race, is retried a bounded
// number of times, so that every caller gets its answer (acquired, in flight
// or completed) as under READ COMMITTED.
func New(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: nil pool")
	}
	table := cfg.Table
	if table == "" {
		table = DefaultTable
	}
	n, err := newNames(cfg.Schema, table)
	if err != nil {
		return nil, err
	}
	if cfg.PruneBatch < 0 || cfg.PruneBatch > math.MaxInt32 {
		return nil, fmt.Errorf("pgstore: PruneBatch %d out of range", cfg.PruneBatch)
	}
	if cfg.MaxKeys < 0 {
		return nil, fmt.Errorf("pgstore: negative MaxKeys %d", cfg.MaxKeys)
	}
	if cfg.ClientKeys < 0 || cfg.ClientKeys > math.MaxInt32 || cfg.ClientWindow < 0 {
		return nil, fmt.Errorf("pgstore: ClientKeys %d or ClientWindow %v out of range", cfg.ClientKeys, cfg.ClientWindow)
	}
	h := fnv.New64a()
	h.Write([]byte("github.com/geoidem/geoidem/keystore/pgstore\x00" + n.table))
	mode := pool.Config().ConnConfig.DefaultQueryExecMode
	s := &Store{
		pool:      pool,
		typedArgs: mode == pgx.QueryExecModeCacheStatement || mode == pgx.QueryExecModeCacheDescribe,
		names:     n,
		sql:       newStatements(n),
		lockKey:   int64(h.Sum64()),
		batch:     orDefault(cfg.PruneBatch, defaultPruneBatch),
		log:       cfg.Logger,
		observe:   cfg.Observer,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientKeys > 0 {
		window := cfg.ClientWindow
		if window == 0 {
			window = defaultClientWindow
		}
		s.clientKeys = int32(cfg.ClientKeys)
		s.clientWindow, _ = micros(window)
	}
	if s.typedArgs {
		s.claims.limit = max(1, int(pool.Config().MaxConns)/2)
		s.completes.limit = s.claims.limit
	}
	if !cfg.SkipMigrate {
		if err := s.Migrate(ctx); err != nil {
			return nil, err
		}
	}
	every := cfg.PruneInterval
	if every == 0 {
		every = defaultPruneInterval
	}
	if cfg.MaxKeys > 0 {
		s.initRoom(cfg.MaxKeys, max(every, 0))
	}
	if cfg.PruneInterval >= 0 {
		jctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		s.stop, s.done = stop, make(chan struct{})
		go s.janitor(jctx, every)
	}
	return s, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Close stops the janitor, waiting for a prune in progress to be canceled. It
// does not close the pool. Close is idempotent; the Store's other methods
// keep working after it.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		if s.stop != nil {
			s.stop()
			<-s.done
		}
	})
}

// Table returns the quoted, schema-qualified name of the key table, for
// queries of your own (monitoring, say).
func (s *Store) Table() string { return s.names.table }

// micros converts a positive duration to whole microseconds, the database's
// resolution, rounding up.
func micros(d time.Duration) (int64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("pgstore: duration %v must be positive", d)
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond), nil
}

// storeErr wraps err from operation op. When ctx is done, the result also
// wraps ctx.Err(), whatever pgx made of the interruption.
func storeErr(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("pgstore: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

func lost(op string) error {
	return fmt.Errorf("pgstore: %s: %w", op, keystore.ErrLeaseLost)
}

// Extend implements [keystore.Store.Extend]: one fenced UPDATE.
func (s *Store) Extend(ctx context.Context, key string, token keystore.Token, lease time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("pgstore: extend: %w", err)
	}
	us, err := micros(lease)
	if err != nil {
		return 0, err
	}
	if token == 0 || token > math.MaxInt64 {
		return 0, lost("extend") // never issued
	}
	var (
		remaining int64
		inFlight  bool
	)
	err = retrySerialization(ctx, func() error {
		return s.pool.QueryRow(ctx, s.sql.extend, key, int64(token), us).Scan(&remaining, &inFlight)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, lost("extend")
	case err != nil:
		return 0, storeErr(ctx, "extend", err)
	case !inFlight:
		return 0, nil
	}
	return max(time.Duration(remaining)*time.Microsecond, 0), nil
}

// Complete implements [keystore.Store.Complete]: one fenced UPDATE of the
// record's status, header and body columns, which every Claim encodes
// again as the same bytes. So it reads the bytes (see keystore.Store's
// Complete): bytes that are not the middleware's record encoding, exactly
// as it writes it, fail with keystore.ErrCorruptRecord, and a status
// outside 200–599 with keystore.ErrInvalidStatus. See CompleteTx to
// complete inside a transaction of your own.
func (s *Store) Complete(ctx context.Context, key string, token keystore.Token, rec []byte, retention time.Duration) error {
	status, header, body, err := record.Split(rec)
	if err != nil {
		return fmt.Errorf("pgstore: complete: %w", err)
	}
	// No header fields, and no body bytes, are stored as NULL, as a nil
	// header and a nil body: the encoding does not tell them from empty
	// ones, and a Claim encodes them again as the same bytes.
	if len(header) == 1 {
		header = nil
	}
	if len(body) == 0 {
		body = nil
	}
	return s.complete(ctx, s.pool, key, token, int32(status), header, body, retention)
}

// Release implements [keystore.Store.Release]: one INSERT … ON CONFLICT DO
// UPDATE (see releaseSQL), which releases the key the token holds and, held
// or not, fences the token. A completed key is never released: Release with
// its token fails with ErrLeaseLost.
func (s *Store) Release(ctx context.Context, key string, token keystore.Token) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: release: %w", err)
	}
	if token == 0 || token > math.MaxInt64 {
		return lost("release") // never issued, so never to be fenced
	}
	var released bool
	err := retrySerialization(ctx, func() error {
		return s.pool.QueryRow(ctx, s.sql.release, key, int64(token)).Scan(&released)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows), err == nil && !released:
		return lost("release")
	case err != nil:
		return storeErr(ctx, "release", err)
	}
	return nil
}

// complete runs the fenced completion on db: the pool, or a transaction.
func (s *Store) complete(ctx context.Context, db Execer, key string, token keystore.Token, status int32, header, body []byte, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: complete: %w", err)
	}
	us, err := micros(retention)
	if err != nil {
		return err
	}
	if token == 0 || token > math.MaxInt64 {
		return lost("complete")
	}
	if db != Execer(s.pool) {
		var p params
		switch applied, err := s.completeOn(ctx, db, p.complete(false, key, int64(token), status, header, body, us)); {
		case err != nil:
			return storeErr(ctx, "complete", err)
		case !applied:
			return lost("complete")
		}
		return nil
	}
	w := &completeWaiter{batchCall: batchCall{key: key}, token: int64(token), us: us, status: status, header: header, body: body}
	applied, err := s.completeOnPool(ctx, w.p.complete(s.typedArgs, w.key, w.token, w.status, w.header, w.body, w.us), w)
	switch {
	case err != nil:
		return storeErr(ctx, "complete", err)
	case !applied:
		return lost("complete")
	}
	return nil
}

// completeOn runs a completion with args (params.complete's) on db, one
// statement or two: completeHeldSQL, and only when that changed no row,
// completeSQL (a repeat, or a lost lease). It reports whether either
// applied the completion or matched its repeat.
func (s *Store) completeOn(ctx context.Context, db Execer, args []any) (bool, error) {
	tag, err := db.Exec(ctx, s.sql.completeHeld, args...)
	if err != nil || tag.RowsAffected() > 0 {
		return err == nil, err
	}
	tag, err = db.Exec(ctx, s.sql.complete, args...)
	return err == nil && tag.RowsAffected() > 0, err
}

var _ keystore.ClientBounded = (*Store)(nil)

// ClientBound implements keystore.ClientBounded: Config.ClientKeys per
// Config.ClientWindow, or none when ClientKeys is zero.
func (s *Store) ClientBound() keystore.ClientBound {
	if s.clientKeys == 0 {
		return keystore.ClientBound{}
	}
	return keystore.ClientBound{Keys: int(s.clientKeys), Window: time.Duration(s.clientWindow) * time.Microsecond}
}
