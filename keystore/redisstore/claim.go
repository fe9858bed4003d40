package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
)

// Claim implements keystore.Store. The lease is judged by the Redis server's
// clock. A Claim that takes over an expired lease reports TookOver if the
// lease expired less than a minute ago; after that the abandoned entry has
// been deleted and the key is simply absent. With Config.ClientKeys, a
// claim for a client is counted against its bound (see claimBounded).
// With Config.MaxMemory, while the server's memory is at the bound, a
// claim of a key with no entry fails with a *keystore.FullError (see
// room.go), and every other claim is answered as usual.
func (s *Store) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Claim{}, fmt.Errorf("redisstore: claim: %w", err)
	}
	if err := a.Validate(); err != nil {
		return keystore.Claim{}, err
	}
	leaseMs := ceilMillis(a.Lease)
	var claim keystore.Claim
	var err error
	var full *keystore.FullError
	if s.room.max > 0 {
		full = s.full()
	}
	var rkey string // the Redis key, when this claim built it
	switch {
	case full != nil:
		rkey = s.RedisKey(key)
		claim, err = s.claimNoNew(ctx, rkey, a, leaseMs, full)
	case s.clientKeys > 0 && a.Client != "":
		claim, err = s.claimBounded(ctx, key, a, leaseMs)
	case s.waitReplicas > 0:
		rkey = s.RedisKey(key)
		claim, _, err = s.claimReplicated(ctx, rkey, a.Fingerprint, a.Token, leaseMs)
	default:
		var args *setArgs
		args, rkey = newClaimSet(s.prefix, key)
		claim, _, err = s.claimWith(ctx, s.client, args, rkey, a.Fingerprint, a.Token, leaseMs)
	}
	if err == nil && claim.Acquired {
		s.fps.put(key, a.Token, a.Fingerprint, rkey)
	}
	return claim, err
}

// conn is what a claim runs on: the store's client, or, with WaitReplicas,
// one connection to the key's master.
type conn interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// claim claims rkey in one round trip of one plain command, the one a claim
// by hand would send:
//
//	SET rkey 'i'|fp|token PX lease+grace NX GET
//
// The SET acquires an absent key and returns the value of a present one
// unchanged: a completed record (a replay), an in-flight entry or a
// released one. Only for an in-flight entry, whose remaining lease the
// answer must tell and whose lease may have run out, and for a released
// one, which the claim's token may be fenced from, does claim run
// claimScript, which decides again atomically, reads the lease and takes
// an expired one over, or checks the fences and acquires: a second round
// trip, on the path of a duplicate sent while its request runs, of a
// crashed or stalled holder, and of a retry after a release.
//
// isNew reports whether the SET acquired an absent key.
func (s *Store) claim(ctx context.Context, c conn, rkey string, fp keystore.Fingerprint, token keystore.Token, leaseMs int64) (claim keystore.Claim, isNew bool, err error) {
	return s.claimWith(ctx, c, new(setArgs), rkey, fp, token, leaseMs)
}

// claimWith is claim with its arguments made in args (see newClaimSet).
func (s *Store) claimWith(ctx context.Context, c conn, args *setArgs, rkey string, fp keystore.Fingerprint, token keystore.Token, leaseMs int64) (claim keystore.Claim, isNew bool, err error) {
	grace := abandonedGrace.Milliseconds()
	args.set(rkey, fp, token, s.ttlArg.get(leaseMs+grace))
	args.cmd = *redis.NewStringCmd(ctx, args.a[:]...)
	set := &args.cmd
	switch {
	case s.batch != nil && any(c) == any(s.client):
		if err := s.batch.do(ctx, set); err != nil {
			return keystore.Claim{}, false, opError(ctx, "claim", err)
		}
	default:
		_ = c.Process(ctx, set)
	}
	old, err := set.Result()
	switch {
	case err == redis.Nil: // absent: acquired
		return acquired(fp, false), true, nil
	case err != nil:
		return keystore.Claim{}, false, opError(ctx, "claim", err)
	}
	if len(old) > 0 && (old[0] == 'i' || old[0] == 'r') {
		// In flight: read its lease, or take the key over if that has run
		// out; released: acquire it unless the token is fenced; atomically.
		// This claim's own entry, its token and all (go-redis resent the
		// SET after Redis applied it and the reply was lost, or the caller
		// repeated its Claim), goes the same way: acquired while its lease
		// runs, taken over like any expired lease once it has run out.
		claim, err = s.claimScripted(ctx, c, rkey, fp, args.v[:], leaseMs+grace, grace)
		return claim, false, err
	}
	claim, ok := parseClaim(old)
	if !ok {
		return keystore.Claim{}, false, fmt.Errorf("redisstore: claim: key holds a value that is not an idempotency entry: %.80q", old)
	}
	return claim, false, nil
}

// inFlightValue returns the value of an in-flight entry: 'i' |
// fingerprint | token.
func inFlightValue(fp keystore.Fingerprint, token keystore.Token) (v [1 + len(keystore.Fingerprint{}) + 8]byte) {
	v[0] = 'i'
	copy(v[1:], fp[:])
	binary.BigEndian.PutUint64(v[1+len(fp):], uint64(token))
	return v
}

// acquired is the Claim of a key acquired with fingerprint fp.
func acquired(fp keystore.Fingerprint, tookOver bool) keystore.Claim {
	return keystore.Claim{Acquired: true, State: keystore.InFlight, TookOver: tookOver, Fingerprint: fp}
}

// claimScripted runs claimScript, for a key found in flight or released.
func (s *Store) claimScripted(ctx context.Context, c redis.Scripter, rkey string, fp keystore.Fingerprint, v []byte, ttlMs, graceMs int64) (keystore.Claim, error) {
	var res any
	var err error
	keys := scriptKeys(rkey)
	if any(c) == any(s.client) {
		res, err = s.run(ctx, claimScript, newEval(claimScript, keys...).bytes(v).arg(ttlMs).arg(graceMs)).Result()
	} else {
		res, err = claimScript.Run(ctx, c, keys, v, ttlMs, graceMs).Result()
	}
	if err != nil {
		return keystore.Claim{}, opError(ctx, "claim", err)
	}
	return s.scriptedClaim(res, fp)
}

// scriptedClaim reads claimScript's reply, for a claim with fingerprint fp.
func (s *Store) scriptedClaim(res any, fp keystore.Fingerprint) (keystore.Claim, error) {
	if n, ok := res.(int64); ok && n == -1 {
		return keystore.Claim{}, fmt.Errorf("redisstore: claim: the token was released before the claim arrived: %w", keystore.ErrLeaseLost)
	}
	claim, ok := parseClaim(res)
	if !ok {
		return keystore.Claim{}, fmt.Errorf("redisstore: claim: unexpected reply %.80q", fmt.Sprint(res))
	}
	if claim.Acquired {
		claim.Fingerprint = fp
	}
	return claim, nil
}

// parseClaim decodes claimScript's reply.
func parseClaim(res any) (keystore.Claim, bool) {
	switch res := res.(type) {
	case int64: // acquired
		return acquired(keystore.Fingerprint{}, res == 1), res == 0 || res == 1
	case []any: // in flight
		if len(res) != 2 {
			return keystore.Claim{}, false
		}
		fp, ok1 := res[0].(string)
		rem, ok2 := res[1].(int64)
		if !ok1 || !ok2 || len(fp) != len(keystore.Fingerprint{}) || rem <= 0 {
			return keystore.Claim{}, false
		}
		c := keystore.Claim{State: keystore.InFlight, LeaseRemaining: time.Duration(rem) * time.Millisecond}
		copy(c.Fingerprint[:], fp)
		return c, true
	case string: // completed: the stored value
		const fpEnd = 1 + len(keystore.Fingerprint{})
		head := fpEnd + 8 // 'd' | fingerprint | token
		if len(res) > 0 && res[0] == 'c' {
			head = fpEnd // written by an earlier version: no token
		}
		if len(res) < head || (res[0] != 'c' && res[0] != 'd') {
			return keystore.Claim{}, false
		}
		// The record is the reply's own bytes, not a copy: neither the
		// caller nor the store may change a Claim's Record, and the reply
		// is not used again.
		rec := res[head:]
		c := keystore.Claim{State: keystore.Completed, Record: unsafe.Slice(unsafe.StringData(rec), len(rec))}
		copy(c.Fingerprint[:], res[1:fpEnd])
		return c, true
	}
	return keystore.Claim{}, false
}

// claimReplicated claims on one connection to the key's master, then runs
// WAIT on the same connection (WAIT counts the replicas that acknowledged
// the writes of its own connection).
func (s *Store) claimReplicated(ctx context.Context, rkey string, fp keystore.Fingerprint, token keystore.Token, leaseMs int64) (keystore.Claim, bool, error) {
	node, err := s.masterNode(ctx, rkey)
	if err != nil {
		return keystore.Claim{}, false, opError(ctx, "claim", err)
	}
	conn := node.Conn()
	defer conn.Close()
	claim, isNew, err := s.claim(ctx, conn, rkey, fp, token, leaseMs)
	if err != nil {
		s.redirected(err)
	}
	if err != nil || !claim.Acquired {
		return claim, false, err
	}
	n, err := conn.Wait(ctx, s.waitReplicas, s.waitTimeout).Result()
	if err == nil && n >= int64(s.waitReplicas) {
		return claim, isNew, nil
	}
	// Not admitted: give the key back, so that a retry need not wait for the
	// lease to run out, even if ctx has ended (the client's timeouts bound
	// the attempt). If this fails too, the lease runs out on its own.
	tok := tokenBytes(token)
	_ = releaseScript.Run(context.WithoutCancel(ctx), conn, scriptKeys(rkey), tok[:], abandonedGrace.Milliseconds()).Err()
	if err != nil {
		return keystore.Claim{}, false, opError(ctx, "claim: wait for replicas", err)
	}
	return keystore.Claim{}, false, fmt.Errorf("%w: %d of %d acknowledged within %v", ErrNotReplicated, n, s.waitReplicas, s.waitTimeout)
}
