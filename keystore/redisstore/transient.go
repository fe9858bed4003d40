package redisstore

import "github.com/redis/go-redis/v9"

// Transient reports whether a failed Redis call (a handler's own write to
// Redis, say) may succeed if the sender retries: answer it 503 with
// Retry-After, so that the middleware releases the key and the retry runs
// the handler again; answer a permanent failure 4xx, so that it is
// recorded and the sender stops (see
// [github.com/geoidem/geoidem/keystore/pgstore.Transient] for the rule, and
// [github.com/geoidem/geoidem/problem.Write] to write either).
//
// Permanent, because the request's own data is at fault: a value larger
// than the server takes ("ERR string exceeds maximum allowed size"). nil is
// no failure. Every other error is transient, those Transient does not
// know included (a lost connection, a failover, OOM, and also a handler's
// bug, WRONGTYPE or a script error): an unknown error is transient on
// purpose: answered as the request's fault, it would be recorded and the
// sender would give a valid event up for good.
func Transient(err error) bool {
	return err != nil && !redis.HasErrorPrefix(err, "string exceeds maximum allowed size")
}
