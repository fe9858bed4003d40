package redisstore

import "github.com/redis/go-redis/v9"

// The value stored under an idempotency key's Redis key is one string:
//
//	in flight:  'i' | fingerprint (32 bytes) | token (8 bytes, big endian)
//	completed:  'c' | fingerprint (32 bytes) | record (see record.go)
//
// In Lua's 1-based string indexing the fingerprint is bytes 2..33 and the
// token bytes 34..41.
//
// The lease deadline is not stored in the value: it is the key's expiry
// minus the grace. An in-flight key expires lease+grace after its last claim
// or extension, so its lease has run out exactly when its PTTL is at most
// grace, by the Redis server's clock. For that grace after its lease ran
// out the entry is still there: the Claim that takes it over can report
// TookOver, and the expiry, not the key's absence, fences the stale token.
// A completed key expires at the end of its retention.
//
// The scripts call no TIME and format no numbers. Claim runs claimScript
// only to take over a key whose lease has run out; a new key, a replay and
// a key in flight are answered by the plain commands of Store.claim.

// holdCheck returns 0 (lease lost) unless the entry in v is in flight, held by
// the token in ARGV[1], with its lease still running (PTTL above the grace in
// ARGV[2]).
const holdCheck = `
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 1) ~= 'i' or string.sub(v, 34) ~= ARGV[1] then
  return 0
end
if redis.call('PTTL', KEYS[1]) <= tonumber(ARGV[2]) then
  return 0
end
`

// claimScript, the takeover path of Store.claim: KEYS[1] the key; ARGV[1] the new in-flight value
// ('i' | fingerprint | token), ARGV[2] lease+grace (ms), ARGV[3] grace (ms).
// Returns
//
//	0 or 1                      acquired; 1 when it took over an expired lease
//	{fingerprint, remaining}    in flight, remaining lease in ms
//	value (a string)            completed: the whole stored value
var claimScript = redis.NewScript(`
local v = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
if not v then
  return 0
end
local st = string.sub(v, 1, 1)
if st == 'c' then
  return v
end
if st ~= 'i' then
  return redis.error_reply('ERR redisstore: key holds a value that is not an idempotency entry')
end
local rem = redis.call('PTTL', KEYS[1]) - tonumber(ARGV[3])
if rem > 0 then
  return {string.sub(v, 2, 33), rem}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// extendScript: KEYS[1] the key; ARGV[1] token, ARGV[2] grace (ms),
// ARGV[3] lease+grace (ms). Returns 1 if extended, 0 if the lease was lost.
var extendScript = redis.NewScript(holdCheck + `
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// completeScript: KEYS[1] the key; ARGV[1] token, ARGV[2] grace (ms),
// ARGV[3] encoded record, ARGV[4] retention (ms). Returns 1 if completed, 0
// if the lease was lost.
var completeScript = redis.NewScript(holdCheck + `
redis.call('SET', KEYS[1], 'c' .. string.sub(v, 2, 33) .. ARGV[3], 'PX', ARGV[4])
return 1
`)

// releaseScript: KEYS[1] the key; ARGV[1] token, ARGV[2] grace (ms).
// Returns 1 if released, 0 if the lease was lost.
var releaseScript = redis.NewScript(holdCheck + `
redis.call('DEL', KEYS[1])
return 1
`)
