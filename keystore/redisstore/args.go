package redisstore

import (
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
)

// evalArgs holds the arguments of one EVALSHA in one allocation: the
// keys, then the arguments, byte strings among them boxed as pointers
// into it (bytesArg, which go-redis writes through MarshalBinary), where
// a []byte in an interface is an allocation of its own. Keys stay
// strings: go-redis reads a Cluster's or Ring's slot from them.
type evalArgs struct {
	a  [3 + maxEvalArgs]any
	n  int
	b  [2]bytesArg
	nb int
	v  [1 + len(keystore.Fingerprint{}) + 8]byte // an in-flight value (inFlightValue)
	// cmd is the command, made by Store.run, which runs an evalArgs once.
	cmd redis.Cmd
}

// maxEvalArgs is how many keys and arguments a script of this package
// takes at most.
const maxEvalArgs = 8

// bytesArg is a byte string argument; go-redis sends it as it is.
type bytesArg []byte

// MarshalBinary implements encoding.BinaryMarshaler, which go-redis
// writes byte for byte.
func (b *bytesArg) MarshalBinary() ([]byte, error) { return *b, nil }

// newEval starts the arguments of script with keys.
func newEval(script luaScript, keys ...string) *evalArgs {
	e := new(evalArgs)
	e.a[0], e.a[1], e.a[2] = "evalsha", script.sha, len(keys)
	e.n = 3
	for _, k := range keys {
		e.a[e.n] = k
		e.n++
	}
	return e
}

// bytes adds a byte string argument, which must stay unchanged until the
// command is sent.
func (e *evalArgs) bytes(b []byte) *evalArgs {
	if e.nb == len(e.b) {
		return e.arg(b)
	}
	e.b[e.nb] = b
	e.a[e.n] = &e.b[e.nb]
	e.nb++
	e.n++
	return e
}

// inFlight adds the in-flight value of a claim by token with fingerprint
// fp (inFlightValue), and returns it.
func (e *evalArgs) inFlight(fp keystore.Fingerprint, token keystore.Token) []byte {
	e.v = inFlightValue(fp, token)
	e.bytes(e.v[:])
	return e.v[:]
}

// arg adds an argument of any other kind (boxed already, for one that
// would allocate: see boxCache).
func (e *evalArgs) arg(v any) *evalArgs {
	e.a[e.n] = v
	e.n++
	return e
}

// args returns the EVALSHA command's arguments.
func (e *evalArgs) args() []any { return e.a[:e.n] }

// hasKeys reports whether the script takes keys.
func (e *evalArgs) hasKeys() bool { return e.a[2] != 0 }

// setArgs holds the arguments of a claim's SET … NX GET, its in-flight
// value, the command and, when it fits, the bytes of the key, in one
// allocation.
type setArgs struct {
	a   [7]any
	v   [1 + len(keystore.Fingerprint{}) + 8]byte
	b   bytesArg
	k   string // the key
	cmd redis.StringCmd
	kb  [128]byte // the key's bytes, when newClaimSet built it here
}

// newClaimSet returns the arguments of a claim of key, and its Redis key,
// prefix + "{" + key + "}" (Store.RedisKey), made in the arguments' memory
// when it fits there: the string is never written again, and keeps the
// arguments alive as long as it is used.
func newClaimSet(prefix, key string) (*setArgs, string) {
	c := new(setArgs)
	n := len(prefix) + len(key) + 2
	if n > len(c.kb) {
		return c, prefix + "{" + key + "}"
	}
	b := append(append(append(append(c.kb[:0], prefix...), '{'), key...), '}')
	return c, unsafe.String(&b[0], n)
}

// set sets the arguments of SET rkey value PX ttl NX GET, value the
// in-flight value of a claim by token with fingerprint fp, and returns
// c.
func (c *setArgs) set(rkey string, fp keystore.Fingerprint, token keystore.Token, ttl any) *setArgs {
	c.v = inFlightValue(fp, token)
	c.b = c.v[:]
	c.k = rkey
	c.a = [7]any{"set", c.k, &c.b, "px", ttl, "nx", "get"}
	return c
}

// newSet returns the arguments of SET rkey value PX ttl NX GET (see set).
func newSet(rkey string, fp keystore.Fingerprint, token keystore.Token, ttl any) *setArgs {
	return new(setArgs).set(rkey, fp, token, ttl)
}
