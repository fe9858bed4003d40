package redisstore

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The value stored under an idempotency key's Redis key is one string:
//
//	in flight:  'i' | fingerprint (32 bytes) | token (8 bytes, big endian)
//	completed:  'd' | fingerprint (32 bytes) | token (8 bytes) | record (see record.Append)
//	released:   'r' | releaser (8 bytes) | fenced tokens (8 bytes each)
//
// where the completed entry's token is the one that completed it. Entries
// written by earlier versions of this package, 'c' | fingerprint | record,
// carry no token; they are read and replayed like the others. In Lua's
// 1-based string indexing the fingerprint is bytes 2..33, the token bytes
// 34..41 and a completed entry's record bytes 42 onwards.
//
// The lease deadline is not stored in the value: it is the key's expiry
// minus the grace. An in-flight key expires lease+grace after its last claim
// or extension, so its lease has run out exactly when its PTTL is at most
// grace, by the Redis server's clock. For that grace after its lease ran
// out the entry is still there: the Claim that takes it over can report
// TookOver, and the expiry, not the key's absence, fences the stale token.
// A completed key expires at the end of its retention.
//
// A released entry lives for the grace. Release by the holder writes one,
// naming it the releaser: a Release repeated by that token then succeeds.
// A Release by a token that does not hold the key fences it (see package
// keystore, "Claims whose outcome is unknown"): on an absent or released
// key it adds the token to the released entry's fenced tokens (the
// releaser all zeros when there is none); on a key in flight for another
// token, it adds the token to the set under the key's fence key
// (Store.RedisKey + ":fenced", the same hash tag and so the same Cluster
// slot; see scriptKeys for the exception), kept until the grace after that
// lease ends. A Claim never acquires for a token the key's released entry
// or fence set names: it fails with ErrLeaseLost. A Claim that acquires a
// released key moves the tokens of its released entry into the fence set
// first (see claimScript). Values under the key that are none of these
// entries (a string that merely begins with 'i' or 'r') are never changed:
// Claim fails on them with an error, Extend, Complete and Release with
// ErrLeaseLost.
//
// The scripts call no TIME and format no numbers. Claim runs claimScript
// only for a key found in flight or released; a new key and a replay are
// answered by the plain SET … NX GET of Store.claim, or, for a bounded
// client on one server, by claimCountedScript.

// holdCheck sets v to the entry, held to whether the token in ARGV[1] holds
// it (in flight, its lease still running: PTTL above the grace in ARGV[2]),
// and done to whether that token completed it.
const holdCheck = `
local v = redis.call('GET', KEYS[1])
local st = v and string.sub(v, 1, 1)
local held = st == 'i' and string.sub(v, 34) == ARGV[1] and redis.call('PTTL', KEYS[1]) > tonumber(ARGV[2])
local done = st == 'd' and string.sub(v, 34, 41) == ARGV[1]
`

// names reports whether the 8-byte token t is one of the tokens in s from
// byte i on; released whether v is a released entry ('r', then whole
// tokens), not some other value that begins with 'r'.
const names = `
local function names(s, i, t)
  for j = i, #s - 7, 8 do
    if string.sub(s, j, j + 7) == t then
      return true
    end
  end
  return false
end
local function released(v)
  return string.sub(v, 1, 1) == 'r' and #v >= 9 and (#v - 9) % 8 == 0
end
`

// claimScript, the script path of Store.claim: KEYS[1] the key, KEYS[2]
// its fence key (absent for the rare keys that have none, see
// scriptKeys); ARGV[1] the new in-flight value ('i' | fingerprint |
// token), ARGV[2] lease+grace (ms), ARGV[3] grace (ms). Returns
//
//	0 or 1                      acquired; 1 when it took over an expired lease
//	-1                          the token is fenced: nothing acquired
//	{fingerprint, remaining}    in flight, remaining lease in ms
//	value (a string)            completed: the whole stored value
//
// A token is fenced when the released entry or the fence set names it.
// The Claim that acquires a released key replaces its released entry, so
// it first moves the tokens that entry names (its releaser and the tokens
// it fences) into the fence set, kept for at least the grace: the longest
// the released entry could still have kept them. A Claim whose token
// already holds the key (its own value, a resend) is acquired while the
// lease runs, and otherwise takes the expired lease over like any other.
var claimScript = newLua(names + `
local fence = KEYS[2]` + claimBody)

// claimBody is claimScript's decision, shared with claimCountedScript: the
// key KEYS[1], its fence key in fence (nil when it has none), and ARGV[1..3]
// as claimScript takes them.
const claimBody = `
local v = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
if not v then
  return 0
end
local st = string.sub(v, 1, 1)
if st == 'd' or st == 'c' then
  return v
end
local tok = string.sub(ARGV[1], 34)
local function fenced()
  return fence ~= nil and redis.call('SISMEMBER', fence, tok) == 1
end
if released(v) then
  if names(v, 2, tok) or fenced() then
    return -1
  end
  if fence then
    local moved = false
    for j = 2, #v - 7, 8 do
      local t = string.sub(v, j, j + 7)
      if t ~= string.rep('\0', 8) then
        redis.call('SADD', fence, t)
        moved = true
      end
    end
    if moved and redis.call('PTTL', fence) < tonumber(ARGV[3]) then
      redis.call('PEXPIRE', fence, ARGV[3])
    end
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 0
end
if st ~= 'i' or #v ~= #ARGV[1] then
  return redis.error_reply('ERR redisstore: key holds a value that is not an idempotency entry')
end
local rem = redis.call('PTTL', KEYS[1]) - tonumber(ARGV[3])
if rem > 0 then
  if v == ARGV[1] then
    return 0
  end
  return {string.sub(v, 2, 33), rem}
end
if fenced() then
  return -1
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`

// claimCountedScript is Store.claim and the client's count in one script,
// for a bounded claim on a standalone Redis (where the counter and the key
// live on one server): KEYS[1] the key, KEYS[2] the client's counter
// (Store.clientKey), KEYS[3] the key's fence key (absent, as for
// claimScript); ARGV[1..3] as claimScript's, ARGV[4] the window (ms),
// ARGV[5] the bound. Only a key with no entry at all is a new key: the
// script counts it, and acquires it (0, as claimScript), or, the count
// being past the bound, takes the count back and writes nothing, and
// returns {0, the window's remaining ms}; the window starts with the
// count's first key (and a counter found without an expiry, none should
// be, gets one when it refuses). A record is returned as it is (a replay:
// one GET); every other key (in flight, released) goes on as
// claimScript, the count untouched: a replay is never counted, and never
// refused. The functions of claimScript are defined after the paths of a
// new key and a record, which then create none.
var claimCountedScript = newLua(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local st = string.sub(cur, 1, 1)
  if st == 'd' or st == 'c' then
    return cur
  end
else
  local n = redis.call('INCR', KEYS[2])
  if n > tonumber(ARGV[5]) then
    redis.call('DECR', KEYS[2])
    local left = redis.call('PTTL', KEYS[2])
    if left < 0 then
      redis.call('PEXPIRE', KEYS[2], ARGV[4])
      left = tonumber(ARGV[4])
    end
    return {0, left}
  end
  if n == 1 then
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 0
end
local fence = KEYS[3]` + names + claimBody)

// extendScript: KEYS[1] the key; ARGV[1] token, ARGV[2] grace (ms),
// ARGV[3] lease+grace (ms). Returns 2 + the lease that remained (ms) if
// extended, 1 if the token completed the key (nothing changes), 0 if the
// lease was lost.
var extendScript = newLua(holdCheck + `
if held then
  local rem = redis.call('PTTL', KEYS[1]) - tonumber(ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 2 + rem
end
if done then
  return 1
end
return 0
`)

// completeScript: KEYS[1] the key; ARGV[1] token, ARGV[2] grace (ms),
// ARGV[3] encoded record, ARGV[4] retention (ms). Returns 1 if completed,
// or if the token already completed the key with the same record (nothing
// changes), 0 if the lease was lost.
var completeScript = newLua(completeSrc(""))

// completeSrc is completeScript's source, with again run when the token
// already completed the key with the same record.
func completeSrc(again string) string {
	return holdCheck + `
if held then
  redis.call('SET', KEYS[1], 'd' .. string.sub(v, 2, 33) .. ARGV[1] .. ARGV[3], 'PX', ARGV[4])
  return 1
end
if done and string.sub(v, 42) == ARGV[3] then
` + again + `  return 1
end
return 0
`
}

// rewrite writes the key's value, v, back as it is, keeping its expiry: a
// write that changes nothing, for the WAIT that follows a completion
// under Config.WaitReplicas (see Store.runReplicated). A Complete
// repeated after one whose WAIT fell short finds the record already
// stored and would otherwise write nothing, and WAIT counts only the
// writes of its own connection: on a connection that wrote nothing, or
// only earlier, it would be satisfied by replicas that have not received
// the record. The rewrite reaches the replicas after the record, so a
// replica that acknowledges it has the record.
func rewrite(v string) string {
	return "  redis.call('SET', KEYS[1], " + v + ", 'KEEPTTL')\n"
}

// completeReplScript is completeScript for a Store with
// Config.WaitReplicas: a completion repeated by its token rewrites the
// record (see rewrite).
var completeReplScript = newLua(completeSrc(rewrite("v")))

// releaseScript: KEYS[1] the key, KEYS[2] its fence key (absent for the
// rare keys that have none, see scriptKeys); ARGV[1] token, ARGV[2] grace
// (ms). Returns 1 if released, or if the token released the key and nobody
// has claimed it since (nothing changes); 0 if the token does not hold the
// key, which it then fences.
var releaseScript = newLua(holdCheck + names + `
if held then
  redis.call('SET', KEYS[1], 'r' .. ARGV[1], 'PX', ARGV[2])
  return 1
end
if not v then
  redis.call('SET', KEYS[1], 'r' .. string.rep('\0', 8) .. ARGV[1], 'PX', ARGV[2])
  return 0
end
if released(v) then
  if string.sub(v, 2, 9) == ARGV[1] then
    return 1
  end
  if not names(v, 10, ARGV[1]) then
    redis.call('SET', KEYS[1], v .. ARGV[1], 'PX', ARGV[2])
  end
  return 0
end
if st == 'i' and #v == 41 and KEYS[2] then
  redis.call('SADD', KEYS[2], ARGV[1])
  local p = math.max(redis.call('PTTL', KEYS[1]), 0) + tonumber(ARGV[2])
  if redis.call('PTTL', KEYS[2]) < p then
    redis.call('PEXPIRE', KEYS[2], p)
  end
end
return 0
`)

// completeOwnScript is Complete's script when the Store knows the
// fingerprint of the claim it completes (it acquired the key itself, see
// Store.fps): the fingerprint makes the whole in-flight value and the whole
// completed one known in advance, so that the record is written by one
// SET … GET that returns the value it replaced, instead of a GET and a
// SET. Only when the replaced value was not this claim's in-flight entry
// does the script put it back, as it was (same value, same expiry: Redis 7
// and Valkey 8 freeze the clock for a script's run), so nothing changes.
//
// KEYS[1] the key; ARGV[1] the in-flight value ('i' | fingerprint |
// token), ARGV[2] the completed value ('d' | fingerprint | token | record),
// ARGV[3] retention (ms). The grace is written into the script. Returns as
// completeScript: 1 if completed, or if the token already completed the
// key with the same record, 0 if the lease was lost.
//
// Against completeScript's GET, PTTL and SET with the value assembled in
// Lua, it runs two commands and no string operations, and takes one
// argument less: about a fifth fewer instructions for Redis.
var completeOwnScript = newLua(completeOwnSrc(""))

// completeOwnSrc is completeOwnScript's source, with again run when the
// token already completed the key with the same record and the key's
// expiry is within the grace (otherwise the script has already put the
// value back, a write).
func completeOwnSrc(again string) string {
	return `
local p = redis.call('PTTL', KEYS[1])
if p > ` + strconv.FormatInt(abandonedGrace.Milliseconds(), 10) + ` then
  local v = redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3], 'GET')
  if v == ARGV[1] then
    return 1
  end
  redis.call('SET', KEYS[1], v, 'PX', p)
  if v == ARGV[2] then
    return 1
  end
  return 0
end
if redis.call('GET', KEYS[1]) == ARGV[2] then
` + again + `  return 1
end
return 0
`
}

// completeOwnReplScript is completeOwnScript for a Store with
// Config.WaitReplicas (see rewrite).
var completeOwnReplScript = newLua(completeOwnSrc(rewrite("ARGV[2]")))

// luaScript is a script the Store runs through Store.run: its SHA1 boxed
// once, for EVALSHA's argument, and its source, for the EVAL fallback.
type luaScript struct {
	*redis.Script
	sha any
	src string
}

func newLua(src string) luaScript {
	sc := redis.NewScript(src)
	return luaScript{Script: sc, sha: sc.Hash(), src: src}
}
