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
// its first count started. It lives on its own Cluster slot, not the
// idempotency key's, so no script or MULTI can span the two: a bounded
// Claim sends the claim's SET … NX GET and incrScript together, in one
// round trip (one pipeline; split by node on a Cluster, sent to both at
// once). The SET decides, as without a bound; the count follows it:
//
//   - the SET acquired an absent key: the count, this key included, is
//     within the bound, or the key is released by the claim's token
//     (a second round trip) and the Claim fails with a client FullError;
//   - the SET found the key (a record, in flight, released): decrScript
//     takes the count back, a second round trip on the path of replays
//     and duplicates, which a bound must never count.
//
// The Store remembers, per client, a count that reached the bound until
// its window ends (blocks): a Claim for such a client sends a plain GET
// instead, which replays a record and reports a key in flight as usual,
// and refuses an absent key without writing anything. So a client past
// its bound costs one read a request, and only the first Claim that finds
// it so, in each process, acquires and releases.

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

// decrScript: KEYS[1] the client's counter. Takes back one count, if the
// counter still exists (its window may have ended meanwhile: a DECR would
// then make a counter without an expiry).
var decrScript = newLua(`
if redis.call('PTTL', KEYS[1]) > 0 then
  redis.call('DECR', KEYS[1])
end
return 0
`)

// clientKey returns the Redis key of client's counter. It cannot be an
// idempotency key's (those continue the prefix with '{').
func (s *Store) clientKey(client string) string { return s.prefix + "client:" + client }

// claimBounded is Claim for a client, with Config.ClientKeys set.
func (s *Store) claimBounded(ctx context.Context, key string, a keystore.ClaimArgs, leaseMs int64) (keystore.Claim, error) {
	rkey := s.RedisKey(key)
	if wait := s.blocks.wait(a.Client); wait > 0 && s.waitReplicas == 0 {
		return s.claimNoNew(ctx, rkey, a, leaseMs, wait)
	}
	ckey := s.clientKey(a.Client)
	var (
		claim keystore.Claim
		isNew bool
		err   error
		count *redis.Cmd
	)
	if s.waitReplicas > 0 {
		// The claim takes two round trips already: the count follows it.
		claim, isNew, err = s.claimReplicated(ctx, rkey, a.Fingerprint, a.Token, leaseMs)
		if err != nil || !isNew {
			return claim, err
		}
		count = s.run(ctx, incrScript, []string{ckey}, s.windowArg)
	} else {
		count = redis.NewCmd(ctx, "evalsha", incrScript.sha, 1, ckey, s.windowArg)
		count.SetFirstKeyPos(3)
		claim, isNew, err = s.claim(ctx, s.client, rkey, a.Fingerprint, a.Token, leaseMs, count)
		if err != nil {
			return claim, err // the count may have been made: it errs on the strict side
		}
		if redis.HasErrorPrefix(count.Err(), "NOSCRIPT") {
			if isNew {
				count = s.run(ctx, incrScript, []string{ckey}, s.windowArg)
			} else {
				count = nil // never counted
			}
		}
		if !isNew {
			if count != nil && count.Err() == nil {
				_ = s.run(ctx, decrScript, []string{ckey}).Err() // if it fails, the count errs on the strict side
			}
			return claim, nil
		}
	}
	n, left, ok := parseCount(count)
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
	if n, err := s.run(context.WithoutCancel(ctx), releaseScript, scriptKeys(rkey), tok[:], graceArg).Int64(); err != nil || n != 1 {
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

// claimNoNew is the Claim of a client past its bound: one GET, which
// replays a record, and reports a key in flight or takes a released or
// expired one (claimScript: not a new key), as Claim does, and refuses an
// absent key, writing nothing.
func (s *Store) claimNoNew(ctx context.Context, rkey string, a keystore.ClaimArgs, leaseMs int64, wait time.Duration) (keystore.Claim, error) {
	get := redis.NewStringCmd(ctx, "get", rkey)
	if s.batch != nil {
		if err := s.batch.do(ctx, get, nil); err != nil {
			return keystore.Claim{}, opError(ctx, "claim", err)
		}
	} else {
		_ = s.client.Process(ctx, get)
	}
	old, err := get.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return keystore.Claim{}, &keystore.FullError{Client: true, RetryAfter: wait}
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
