package redisstore

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/transient"
)

// Transient reports whether a failed Redis call (a handler's own write to
// Redis, say) may succeed if the sender retries: answer it 503 with
// Retry-After, so that the middleware releases the key and the retry runs
// the handler again; answer any other failure 4xx, so that it is recorded
// and the sender stops (see
// [github.com/geoidem/geoidem/keystore/pgstore.Transient] for the rule, and
// [github.com/geoidem/geoidem/problem.Write] to write either).
//
// Transient: a closed client, a pool timeout or exhaustion; the replies
// LOADING, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, BUSY and OOM; lost
// or refused connections (io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
// ECONNRESET, ECONNREFUSED, EPIPE, ECONNABORTED, any net.Error); timeouts
// and cancellations (context.DeadlineExceeded, context.Canceled). Every
// other error is permanent, nil included: any other reply (WRONGTYPE, a
// script error: a bug no retry fixes), and errors Transient does not know.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		for _, prefix := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM"} {
			if redis.HasErrorPrefix(err, prefix) {
				return true
			}
		}
		return false
	}
	return transient.Conn(err) || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}
