package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// EvictionCheck says what New does about the Redis server's
// maxmemory-policy. Under every allkeys-* and volatile-* policy, a Redis
// that reaches its maxmemory evicts keys that have a TTL, as every key the
// store writes does: a completed record can vanish before its retention,
// and a retry of that request then runs the handler again. Only noeviction
// (Redis's default) makes Redis refuse writes instead, which the store
// reports as an error and the middleware answers 503.
type EvictionCheck int

const (
	// WarnOnEviction (the default) reads the policy at New and logs a
	// warning through Config.Logger when it lets Redis evict, or when it
	// cannot be read (Redis unreachable, CONFIG and INFO both refused). New
	// succeeds either way.
	WarnOnEviction EvictionCheck = iota
	// RefuseEviction makes New fail with an error wrapping
	// ErrEvictionPolicy when the policy lets Redis evict, or cannot be read.
	RefuseEviction
	// SkipEvictionCheck makes New send nothing to Redis.
	SkipEvictionCheck
)

// ErrEvictionPolicy reports, from New with RefuseEviction, a Redis server
// whose maxmemory-policy lets it evict the store's keys before their
// retention, or whose policy could not be read.
var ErrEvictionPolicy = errors.New("redisstore: Redis maxmemory-policy may evict records before their retention")

// evictionCheckTimeout bounds the check New makes, on top of the client's
// own timeouts.
const evictionCheckTimeout = 2 * time.Second

// evicts reports whether a maxmemory-policy lets Redis evict keys with a TTL.
func evicts(policy string) bool {
	return strings.HasPrefix(policy, "allkeys-") || strings.HasPrefix(policy, "volatile-")
}

// checkEviction reads the server's maxmemory-policy into s.policy and acts
// on it as mode says.
func (s *Store) checkEviction(client redis.UniversalClient, mode EvictionCheck, log *slog.Logger) error {
	switch mode {
	case SkipEvictionCheck:
		return nil
	case WarnOnEviction, RefuseEviction:
	default:
		return fmt.Errorf("redisstore: unknown Eviction %d", mode)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), evictionCheckTimeout)
	defer cancel()
	var (
		policy string
		err    error
	)
	if cc, ok := client.(*redis.ClusterClient); ok {
		policy, err = clusterPolicy(ctx, cc)
	} else {
		policy, err = readPolicy(ctx, client)
	}
	switch {
	case err != nil && mode == RefuseEviction:
		return fmt.Errorf("%w: reading it: %w", ErrEvictionPolicy, err)
	case err != nil:
		log.LogAttrs(ctx, slog.LevelWarn, "redisstore: could not read Redis maxmemory-policy; under any policy but noeviction, Redis may evict records before their retention",
			slog.Any("error", err))
		return nil
	}
	s.policy = policy
	switch {
	case !evicts(policy):
		return nil
	case mode == RefuseEviction:
		return fmt.Errorf("%w: maxmemory-policy is %s; set it to noeviction", ErrEvictionPolicy, policy)
	}
	log.LogAttrs(ctx, slog.LevelWarn, "redisstore: Redis maxmemory-policy lets it evict records before their retention, and a retry of an evicted request runs again; set it to noeviction",
		slog.String("maxmemory-policy", policy))
	return nil
}

// clusterPolicy reads the policy of every node, masters and replicas (a
// replica may be promoted), and returns the first evicting one, else
// noeviction's.
func clusterPolicy(ctx context.Context, cc *redis.ClusterClient) (string, error) {
	var (
		mu     sync.Mutex
		result string
	)
	err := cc.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		p, err := readPolicy(ctx, n)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if result == "" || (evicts(p) && !evicts(result)) {
			result = p
		}
		return nil
	})
	return result, err
}

// readPolicy asks one server for its maxmemory-policy: CONFIG GET, or, where
// CONFIG is not allowed (ACLs, managed services), INFO memory.
func readPolicy(ctx context.Context, c redis.Cmdable) (string, error) {
	cfg, cerr := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if p := cfg["maxmemory-policy"]; cerr == nil && p != "" {
		return p, nil
	}
	if ctx.Err() != nil {
		return "", cerr
	}
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return "", errors.Join(cerr, err)
	}
	for line := range strings.Lines(info) {
		if p, ok := strings.CutPrefix(line, "maxmemory_policy:"); ok {
			return strings.TrimSpace(p), nil
		}
	}
	return "", errors.Join(cerr, errors.New("INFO memory has no maxmemory_policy"))
}
