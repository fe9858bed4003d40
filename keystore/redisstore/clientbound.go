package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
)

var _ keystore.ClientBounded = (*Store)(nil)

// ClientBound implements keystore.ClientBounded: Config.ClientKeys per
// Config.ClientWindow, or none when ClientKeys is zero.
func (s *Store) ClientBound() keystore.ClientBound {
	if s.clientKeys == 0 {
		return keystore.ClientBound{}
	}
	return keystore.ClientBound{Keys: s.clientKeys, Window: s.clientWindow}
}

// The count of a client's new keys is one integer under the client's
// counter key (Store.clientKey), which expires at the end of the window
// its first count started. Only a Claim that finds no entry for its key
// counts; a replay, a key in flight, a released key never does, and is
// never refused for the bound.
//
// On a standalone Redis (a *redis.Client, Sentinel included) the key and
// the counter live on one server, and one script, claimCountedScript,
// decides the claim and the count together: a bounded Claim is one round
// trip whatever it finds, a replay one GET inside the script, and a new
// key past the bound is refused without anything written.
//
// On a Cluster (or a Ring) the counter lives on its own slot, not the
// idempotency key's, so no script can span the two: the Claim sends the
// claim's plain SET … NX GET first, and only when that acquired an absent
// key counts it (incrScript, a second round trip on the path of new keys
// only); past the bound it gives the key back by its token (a third) and
// fails with a client FullError. A replay is the SET alone. The Store
// remembers, per client, a count that reached the bound until its window
// ends (blocks): a Claim for such a client sends a plain GET instead,
// which replays a record and reports a key in flight as usual, and
// refuses an absent key without writing anything.

// incrScript: KEYS[1] the client's counter; ARGV[1] the window (ms).
// Returns {count, the window's remaining ms}. A counter found without an
// expiry (none should be) gets one.
var incrScript = newLua(`
local n = redis.call('INCR', KEYS[1])
local p = redis.call('PTTL', KEYS[1])
if p < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  p = tonumber(ARGV[1])
end
return {n, p}
`)

// clientKey returns the Redis key of client's counter. It cannot be an
// idempotency key's (those continue the prefix with '{').
func (s *Store) clientKey(client string) string { return s.prefix + "client:" + client }

// claimBounded is Claim for a client, with Config.ClientKeys set.
func (s *Store) claimBounded(ctx context.Context, key string, a keystore.ClaimArgs, leaseMs int64) (keystore.Claim, error) {
	switch {
	case s.waitReplicas > 0:
		// The claim takes two round trips already: the count follows it.
		rkey := s.RedisKey(key)
		claim, isNew, err := s.claimReplicated(ctx, rkey, a.Fingerprint, a.Token, leaseMs)
		if err != nil || !isNew {
			return claim, err
		}
		return s.countNew(ctx, rkey, a, claim)
	case s.oneNode:
		return s.claimCounted(ctx, key, a, leaseMs)
	}
	rkey := s.RedisKey(key)
	if wait := s.blocks.wait(a.Client); wait > 0 {
		return s.claimNoNew(ctx, rkey, a, leaseMs, &keystore.FullError{Client: true, RetryAfter: wait})
	}
	claim, isNew, err := s.claim(ctx, s.client, rkey, a.Fingerprint, a.Token, leaseMs)
	if err != nil || !isNew {
		return claim, err
	}
	return s.countNew(ctx, rkey, a, claim)
}

// claimCounted is claimBounded on one node: claimCountedScript, one round
// trip.
func (s *Store) claimCounted(ctx context.Context, key string, a keystore.ClaimArgs, leaseMs int64) (keystore.Claim, error) {
	// The key and its fence key share one allocation.
	fenced := s.prefix + "{" + key + "}:fenced"
	keys := [3]string{fenced[:len(fenced)-len(":fenced")], s.clientKey(a.Client), fenced}
	nkeys := 2
	if hasFence(keys[0]) {
		nkeys = 3
	}
	e := newEval(claimCountedScript, keys[:nkeys]...)
	e.inFlight(a.Fingerprint, a.Token)
	e.arg(s.ttlArg.get(leaseMs + abandonedGrace.Milliseconds())).arg(graceArg).arg(s.windowArg).arg(s.boundArg)
	res, err := s.run(ctx, claimCountedScript, e).Result()
	if err != nil {
		return keystore.Claim{}, opError(ctx, "claim", err)
	}
	if r, ok := res.([]any); ok && len(r) == 2 {
		n, ok1 := r[0].(int64)
		ms, ok2 := r[1].(int64)
		if ok1 && ok2 && n == 0 {
			return keystore.Claim{}, &keystore.FullError{Client: true, RetryAfter: time.Duration(ms) * time.Millisecond}
		}
	}
	return s.scriptedClaim(res, a.Fingerprint)
}

// countNew counts claim, which acquired the absent key rkey, against its
// client's bound (incrScript), and gives the key back past it.
func (s *Store) countNew(ctx context.Context, rkey string, a keystore.ClaimArgs, claim keystore.Claim) (keystore.Claim, error) {
	n, left, ok := parseCount(s.run(ctx, incrScript, newEval(incrScript, s.clientKey(a.Client)).arg(s.windowArg)))
	if !ok {
		// The key is acquired and the count unknown (its node failed):
		// the bound lets this one through rather than fail the claim.
		return claim, nil
	}
	if n >= int64(s.clientKeys) {
		s.blocks.set(a.Client, left)
	}
	if n <= int64(s.clientKeys) {
		return claim, nil
	}
	// Past the bound: give the key back before refusing.
	tok := tokenBytes(a.Token)
	if n, err := s.run(context.WithoutCancel(ctx), releaseScript, newEval(releaseScript, scriptKeys(rkey)...).bytes(tok[:]).arg(graceArg)).Int64(); err != nil || n != 1 {
		if err == nil {
			err = keystore.ErrLeaseLost
		}
		// Not a FullError: the caller releases by the token.
		return keystore.Claim{}, fmt.Errorf("redisstore: claim: the client is past its bound, and the key could not be given back: %w", err)
	}
	return keystore.Claim{}, &keystore.FullError{Client: true, RetryAfter: left}
}

// parseCount reads incrScript's reply.
func parseCount(cmd *redis.Cmd) (n int64, left time.Duration, ok bool) {
	res, err := cmd.Slice()
	if err != nil || len(res) != 2 {
		return 0, 0, false
	}
	n, ok1 := res[0].(int64)
	ms, ok2 := res[1].(int64)
	if !ok1 || !ok2 || ms <= 0 {
		return 0, 0, false
	}
	return n, time.Duration(ms) * time.Millisecond, true
}

// claimNoNew is the Claim of a client past its bound, or of any while
// the store is full: one GET, which replays a record, and reports a key
// in flight or takes a released or expired one (claimScript: not a new
// key), as Claim does, and refuses an absent key with refusal, writing
// nothing.
func (s *Store) claimNoNew(ctx context.Context, rkey string, a keystore.ClaimArgs, leaseMs int64, refusal *keystore.FullError) (keystore.Claim, error) {
	get := redis.NewStringCmd(ctx, "get", rkey)
	if s.batch != nil {
		if err := s.batch.do(ctx, get); err != nil {
			return keystore.Claim{}, opError(ctx, "claim", err)
		}
	} else {
		_ = s.client.Process(ctx, get)
	}
	old, err := get.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return keystore.Claim{}, refusal
	case err != nil:
		return keystore.Claim{}, opError(ctx, "claim", err)
	}
	if len(old) > 0 && (old[0] == 'i' || old[0] == 'r') {
		v := inFlightValue(a.Fingerprint, a.Token)
		grace := abandonedGrace.Milliseconds()
		return s.claimScripted(ctx, s.client, rkey, a.Fingerprint, v[:], leaseMs+grace, grace)
	}
	claim, ok := parseClaim(old)
	if !ok {
		return keystore.Claim{}, fmt.Errorf("redisstore: claim: key holds a value that is not an idempotency entry: %.80q", old)
	}
	return claim, nil
}

// blocks remembers the clients whose count reached the bound, until their
// windows end. It holds at most maxBlocks clients; past that it forgets
// those whose windows ended, or, if none has, all of them (the next claim
// of each learns its count again).
type blocks struct {
	n  atomic.Int32 // len(m), read without the lock
	mu sync.Mutex
	m  map[string]time.Time
}

const maxBlocks = 1 << 14

// wait returns how long client's window has left, if its count reached
// the bound; zero otherwise.
func (b *blocks) wait(client string) time.Duration {
	if b.n.Load() == 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.m[client]
	if !ok {
		return 0
	}
	left := time.Until(until)
	if left <= 0 {
		delete(b.m, client)
		b.n.Store(int32(len(b.m)))
	}
	return left
}

// set remembers that client's count reached the bound, for left.
func (b *blocks) set(client string, left time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.m == nil {
		b.m = make(map[string]time.Time)
	}
	if _, ok := b.m[client]; !ok && len(b.m) >= maxBlocks {
		for c, until := range b.m {
			if !until.After(now) {
				delete(b.m, c)
			}
		}
		if len(b.m) >= maxBlocks {
			clear(b.m)
		}
	}
	b.m[client] = now.Add(left)
	b.n.Store(int32(len(b.m)))
}
