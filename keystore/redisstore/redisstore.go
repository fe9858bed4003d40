package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// DefaultKeyPrefix is the prefix of every Redis key a Store writes when
// Config.KeyPrefix is empty.
const DefaultKeyPrefix = "geoidem:"

// defaultWaitTimeout is how long a claim waits for replicas to acknowledge it
// when Config.WaitReplicas is set and Config.WaitTimeout is zero.
const defaultWaitTimeout = 500 * time.Millisecond

// abandonedGrace is how long an in-flight entry is kept after its lease
// expired, so that the claim which takes it over can report
// keystore.Claim.TookOver.
const abandonedGrace = time.Minute

// graceArg is abandonedGrace in milliseconds as a script argument, boxed
// once rather than on every call.
var graceArg any = abandonedGrace.Milliseconds()

// ErrNotReplicated reports that a write made with Config.WaitReplicas set
// was acknowledged by fewer replicas than required within
// Config.WaitTimeout. For a Claim, the store has released the claim (if it
// could reach Redis to do so), so the request was not admitted; it is safe
// to retry later. For a Complete or an Extend, the write is on the master
// only: the record is stored there, or the lease extended there, but a
// failover may lose it; a Complete repeated by the same token changes
// nothing and succeeds once enough replicas acknowledge the record.
var ErrNotReplicated = errors.New("redisstore: not acknowledged by enough replicas")

// Config holds a Store's options. Zero fields mean the documented defaults.
type Config struct {
	// KeyPrefix is prepended to every Redis key the store writes, so that
	// several stores (or applications) can share one Redis database.
	// Default DefaultKeyPrefix. It must not contain '{' or '}': the store puts
	// the idempotency key between braces, as the Cluster hash tag.
	KeyPrefix string

	// WaitReplicas, when positive, makes every Claim that acquires a key,
	// every Complete and every Extend wait until that many replicas have
	// acknowledged its write (Redis WAIT), and fail with an error wrapping
	// ErrNotReplicated if fewer do within WaitTimeout (a Claim releasing
	// its claim). Release does not wait. It costs a second round trip per
	// acquiring Claim, Complete and Extend, plus the replication delay;
	// see the package documentation, Failover.
	// Requires a *redis.Client (standalone or Sentinel) or a
	// *redis.ClusterClient. Default 0: do not wait.
	WaitReplicas int

	// WaitTimeout bounds the wait for WaitReplicas, rounded up to a
	// millisecond. Default 500ms. Ignored when WaitReplicas is 0.
	WaitTimeout time.Duration

	// Eviction says what New does when the server's maxmemory-policy lets
	// Redis evict the store's keys before their retention (every allkeys-*
	// and volatile-* policy): warn through Logger (the default), refuse, or
	// skip the check. See EvictionCheck.
	Eviction EvictionCheck

	// Durability says what New accepts of the server's persistence, that
	// is, of what a Redis restart loses: by default (RefuseVolatile) New
	// fails on a server with no AOF and no RDB save points, which loses
	// every record and claim on a restart. See Durability.
	Durability Durability

	// Logger receives the warnings of the eviction and durability checks.
	// Default: no logging.
	Logger *slog.Logger

	// NoAutoPipeline stops the Store from sending the commands of
	// concurrent calls together. By default, a call that finds two round
	// trips of this Store already under way queues its command, and when
	// one of them returns, everything queued meanwhile goes out as one
	// pipeline (one write, one round trip; split by node for a Cluster or
	// Ring). A lone call never waits for a batch: it is sent at once, on
	// the calling goroutine. Under concurrency this saves the client and
	// Redis a system call or two per command (see the package
	// documentation, Round trips). A call whose context ends while its
	// command is queued or on its way returns at once with the context's
	// error; a queued command is then not sent, one on its way may still
	// run (as with any call whose reply is lost). A batch's round trip is
	// bounded by the latest deadline of its calls' contexts (with the
	// client's ContextTimeoutEnabled), else by the client's timeouts.
	// Claims, Completes and Extends made with WaitReplicas are never
	// batched: their WAIT needs the write's own connection.
	NoAutoPipeline bool

	// ClientKeys, when positive, bounds the new keys one client
	// (keystore.ClaimArgs.Client; the middleware's Config.Client) acquires
	// in a window of ClientWindow that starts with its first: past it, a
	// Claim of a new key for the client fails with a *keystore.FullError
	// whose Client is set and whose RetryAfter is the rest of the window,
	// acquiring nothing. The count lives in Redis, under KeyPrefix +
	// "client:" + the client, expiring with its window, so every process
	// that shares the store shares it. Replays, keys in flight, and keys
	// released and claimed again never count, and are never refused (see
	// the package documentation, Per-client bound, for what it costs a
	// claim). Claims without a client are not bounded. Default 0: no
	// bound.
	ClientKeys int

	// ClientWindow is the window of ClientKeys, rounded up to a
	// millisecond. Default one hour.
	ClientWindow time.Duration

	// MaxMemory, when positive, bounds what all clients together make the
	// server hold: while the server's used_memory (INFO memory; on a
	// Cluster or a Ring, the largest of its masters') is at or above
	// MaxMemory bytes, a Claim of a key with no entry fails with a
	// *keystore.FullError whose Client is not set (the middleware's 503
	// store-full), writing nothing, and whose RetryAfter is when the
	// earliest of a sample of the store's keys expires. Replays, keys in
	// flight and released keys are answered as usual. Set it below the
	// server's maxmemory, with room for what arrives between samples: the
	// Store samples the memory at most once a second, in the background
	// of claims (a Claim pays a few atomic loads for it), and sooner when
	// the records it completed since take it past the bound; it errs by
	// what other processes add in a second. Default 0: no bound.
	MaxMemory int64
}

// defaultClientWindow is the window of Config.ClientKeys when
// Config.ClientWindow is zero.
const defaultClientWindow = time.Hour

// Store is a keystore.Store on Redis, through a go-redis
// [redis.UniversalClient]: standalone, Sentinel or Cluster. It is safe for
// concurrent use by multiple goroutines and by any number of processes
// sharing the same Redis and KeyPrefix.
//
// Each method is one round trip: Claim one plain SET … NX GET (or, for a
// bounded client on a standalone Redis, one script that also counts),
// Extend, Complete and Release a Lua script run by EVALSHA. The package
// documentation lists the exceptions (a key found in flight, a script
// missing from a node's cache, Config.WaitReplicas, a bounded client's new
// key on a Cluster). Concurrent calls share
// round trips (see Config.NoAutoPipeline).
//
// A Store does not own its client: closing the client is the caller's job.
//
// Errors other than keystore.ErrLeaseLost wrap the go-redis error (a timeout,
// a refused connection, a Redis error reply) or, when the context is done,
// the context's error as well; see the package documentation for how the
// client's options bound them in time.
type Store struct {
	client       redis.UniversalClient
	prefix       string
	waitReplicas int
	waitTimeout  time.Duration
	policy       string // maxmemory-policy read at New
	persistence  string // persistence read at New
	fps          fpCache
	batch        *batcher      // nil with Config.NoAutoPipeline
	ttlArg       boxCache      // claims' and extensions' lease+grace
	retArg       boxCache      // completions' retention
	clientKeys   int           // Config.ClientKeys; 0: no bound
	clientWindow time.Duration // Config.ClientWindow, in whole milliseconds
	windowArg    any           // clientWindow in milliseconds, boxed once
	boundArg     any           // clientKeys, boxed once
	oneNode      bool          // the client talks to one server: a *redis.Client
	blocks       blocks        // clients whose count reached the bound (see claimBounded)
	room         room          // Config.MaxMemory and what the last sample found
}

// Ping implements keystore.Pinger: one PING through the store's client (on
// a Cluster, to every node the client uses for it). It touches no key.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return opError(ctx, "ping", err)
	}
	return nil
}

// New returns a Store that keeps its keys in Redis through client. It fails
// on a nil client or an invalid Config, and, with Config.Eviction set to
// RefuseEviction, when the server's maxmemory-policy lets Redis evict keys
// with a TTL or cannot be read. Unless Config.Eviction is
// SkipEvictionCheck, New reads that policy (one command per node, bounded
// by two seconds) and, by default, logs a warning when it evicts.
// Unless Config.Durability is AcceptVolatile, New also reads the server's
// persistence (one round trip per node, two where CONFIG is not allowed,
// bounded by two seconds) and fails with an error wrapping
// ErrNotDurable on a server that keeps nothing across a restart.
func New(client redis.UniversalClient, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	s := &Store{client: client, prefix: cfg.KeyPrefix, waitReplicas: cfg.WaitReplicas, waitTimeout: cfg.WaitTimeout}
	if s.prefix == "" {
		s.prefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(s.prefix, "{}") {
		return nil, fmt.Errorf("redisstore: KeyPrefix %q contains a brace; the store adds the hash tag itself", cfg.KeyPrefix)
	}
	if s.waitReplicas < 0 {
		return nil, fmt.Errorf("redisstore: negative WaitReplicas %d", cfg.WaitReplicas)
	}
	if s.waitTimeout < 0 {
		return nil, fmt.Errorf("redisstore: negative WaitTimeout %v", cfg.WaitTimeout)
	}
	if s.waitTimeout == 0 {
		s.waitTimeout = defaultWaitTimeout
	}
	if cfg.MaxMemory < 0 {
		return nil, fmt.Errorf("redisstore: negative MaxMemory %d", cfg.MaxMemory)
	}
	if cfg.ClientKeys < 0 || cfg.ClientWindow < 0 {
		return nil, fmt.Errorf("redisstore: negative ClientKeys %d or ClientWindow %v", cfg.ClientKeys, cfg.ClientWindow)
	}
	if cfg.ClientKeys > 0 {
		s.clientKeys, s.clientWindow = cfg.ClientKeys, cfg.ClientWindow
		if s.clientWindow == 0 {
			s.clientWindow = defaultClientWindow
		}
		ms := ceilMillis(s.clientWindow)
		s.clientWindow, s.windowArg = time.Duration(ms)*time.Millisecond, ms
		s.boundArg = int64(s.clientKeys)
	}
	s.waitTimeout = time.Duration(ceilMillis(s.waitTimeout)) * time.Millisecond
	if s.waitReplicas > 0 {
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return nil, fmt.Errorf("redisstore: WaitReplicas needs a *redis.Client or *redis.ClusterClient, not %T", client)
		}
	}
	_, s.oneNode = client.(*redis.Client)
	if !cfg.NoAutoPipeline {
		s.batch = &batcher{client: client}
	}
	if err := s.checkEviction(client, cfg.Eviction, cfg.Logger); err != nil {
		return nil, err
	}
	if err := s.checkDurability(client, cfg.Durability, cfg.Logger); err != nil {
		return nil, err
	}
	if cfg.MaxMemory > 0 {
		s.initRoom(cfg.MaxMemory) // the first sample, before any claim
	}
	return s, nil
}

// RedisKey returns the Redis key that holds key's entry: the prefix, then key
// between braces. The braces make key the Cluster hash tag, so everything the
// store keeps for one idempotency key lives on one slot whatever the key
// contains. It is exported for operators and tests (PTTL, OBJECT, DEL).
func (s *Store) RedisKey(key string) string {
	return s.prefix + "{" + key + "}"
}

// Extend implements keystore.Store.
func (s *Store) Extend(ctx context.Context, key string, token keystore.Token, lease time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("redisstore: extend: %w", err)
	}
	leaseMs, err := durationMillis("lease", lease)
	if err != nil {
		return 0, err
	}
	tok := tokenBytes(token)
	grace := abandonedGrace.Milliseconds()
	rkey := s.RedisKey(key)
	e := newEval(extendScript, rkey).bytes(tok[:]).arg(graceArg).arg(s.ttlArg.get(leaseMs + grace))
	var n int64
	if s.waitReplicas > 0 {
		n, err = s.runReplicated(ctx, "extend", rkey, extendScript, e, func(n int64) bool { return n >= 2 })
		if err != nil {
			return 0, err
		}
	} else {
		n, err = s.run(ctx, extendScript, e).Int64()
	}
	switch {
	case err != nil:
		return 0, opError(ctx, "extend", err)
	case n == 0:
		return 0, keystore.ErrLeaseLost
	case n >= 2:
		return time.Duration(n-2) * time.Millisecond, nil
	}
	return 0, nil
}

// Complete implements keystore.Store. The record's bytes are stored as
// they are, copied into the command sent, and every Claim returns them; it
// expires retention from now by the Redis server's clock. The store reads
// the bytes (see keystore.Store's Complete): bytes that are not the
// middleware's record encoding, exactly as it writes it, fail with
// keystore.ErrCorruptRecord, and a status outside 200–599 with
// keystore.ErrInvalidStatus, before anything is sent.
func (s *Store) Complete(ctx context.Context, key string, token keystore.Token, rec []byte, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: complete: %w", err)
	}
	retMs, err := durationMillis("retention", retention)
	if err != nil {
		return err
	}
	if _, err := record.Check(rec); err != nil {
		return fmt.Errorf("redisstore: complete: %w", err)
	}
	var n int64
	cached, ok := s.fps.take(key, token)
	rkey := cached.rkey
	if rkey == "" {
		rkey = s.RedisKey(key)
	}
	if fp := cached.fp; ok {
		// The in-flight value and the completed one share one allocation.
		const head = 1 + len(keystore.Fingerprint{}) + 8
		buf := make([]byte, 0, 2*head+len(rec))
		for _, st := range []byte{'i', 'd'} {
			buf = append(buf, st)
			buf = append(buf, fp[:]...)
			buf = binary.BigEndian.AppendUint64(buf, uint64(token))
		}
		buf = append(buf, rec...)
		script := completeOwnScript
		if s.waitReplicas > 0 {
			script = completeOwnReplScript
		}
		n, err = s.complete(ctx, rkey, script, newEval(script, rkey).bytes(buf[:head:head]).bytes(buf[head:]).arg(s.retArg.get(retMs)))
	} else {
		// The token and the encoded record share one allocation.
		buf := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(rec)), uint64(token))
		buf = append(buf, rec...)
		script := completeScript
		if s.waitReplicas > 0 {
			script = completeReplScript
		}
		n, err = s.complete(ctx, rkey, script, newEval(script, rkey).bytes(buf[:8:8]).arg(graceArg).bytes(buf[8:]).arg(s.retArg.get(retMs)))
	}
	if err != nil {
		return err
	}
	if n != 1 {
		return keystore.ErrLeaseLost
	}
	s.room.completed(rkey, len(rec))
	return nil
}

// complete runs a completion script with e's arguments: with
// WaitReplicas, on the key's master followed by WAIT (runReplicated).
func (s *Store) complete(ctx context.Context, rkey string, script luaScript, e *evalArgs) (int64, error) {
	if s.waitReplicas > 0 {
		return s.runReplicated(ctx, "complete", rkey, script, e, func(n int64) bool { return n == 1 })
	}
	n, err := s.run(ctx, script, e).Int64()
	if err != nil {
		return 0, opError(ctx, "complete", err)
	}
	return n, nil
}

// Release implements keystore.Store. A Release by a token that does not
// hold the key fences the token (see scripts.go), for the grace after the
// release, or after the lease of the key's holder ends.
func (s *Store) Release(ctx context.Context, key string, token keystore.Token) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: release: %w", err)
	}
	cached, _ := s.fps.take(key, token)
	rkey := cached.rkey
	if rkey == "" {
		rkey = s.RedisKey(key)
	}
	tok := tokenBytes(token)
	n, err := s.run(ctx, releaseScript, newEval(releaseScript, scriptKeys(rkey)...).bytes(tok[:]).arg(graceArg)).Int64()
	if err != nil {
		return opError(ctx, "release", err)
	}
	if n != 1 {
		return keystore.ErrLeaseLost
	}
	return nil
}

// scriptKeys returns the keys that claimScript and releaseScript take:
// rkey, and its fence key (see scripts.go), rkey with ":fenced" appended.
// That key has rkey's hash tag, so it lives on the same Cluster slot,
// unless the idempotency key begins with '}': then rkey's hash tag is
// empty, Redis hashes the whole name, and the two could land on different
// slots. Such keys (the middleware never passes one: its keys are
// hexadecimal) get no fence key, so the token of a Release of one that
// found it in flight for another token is not fenced, and the tokens a
// released entry of one fences stay fenced only until the next Claim
// acquires it.
func scriptKeys(rkey string) []string {
	if !hasFence(rkey) {
		return []string{rkey}
	}
	return []string{rkey, rkey + ":fenced"}
}

// hasFence reports whether rkey has a fence key (see scriptKeys).
func hasFence(rkey string) bool {
	i := strings.IndexByte(rkey, '{')
	return i < 0 || !strings.HasPrefix(rkey[i+1:], "}")
}

// run runs script with e's arguments on the store's client by EVALSHA,
// through the batcher when there is one, falling back to EVAL when the
// node lacks the script (NOSCRIPT), as redis.Script.Run does.
func (s *Store) run(ctx context.Context, script luaScript, e *evalArgs) *redis.Cmd {
	e.cmd = *redis.NewCmd(ctx, e.args()...)
	cmd := &e.cmd
	if e.hasKeys() {
		cmd.SetFirstKeyPos(3)
	}
	if s.batch == nil {
		_ = s.client.Process(ctx, cmd)
	} else if err := s.batch.do(ctx, cmd); err != nil {
		// cmd may still be on its way: answer with another.
		failed := redis.NewCmd(ctx)
		failed.SetErr(err)
		return failed
	}
	if err := cmd.Err(); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return cmd
	}
	// EVAL caches the script on the node for the next EVALSHA.
	eval := redis.NewCmd(ctx, append([]any{"eval", script.src}, e.args()[2:]...)...)
	if e.hasKeys() {
		eval.SetFirstKeyPos(3)
	}
	_ = s.client.Process(ctx, eval)
	return eval
}

// opError wraps a failed command's error, and the context's error too when
// the context ended while the command ran.
func opError(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("redisstore: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// durationMillis returns d in milliseconds, rounded up; d must be positive.
func durationMillis(what string, d time.Duration) (int64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("redisstore: %s %v is not positive", what, d)
	}
	return ceilMillis(d), nil
}

func ceilMillis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

func tokenBytes(t keystore.Token) [8]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t))
	return b
}
