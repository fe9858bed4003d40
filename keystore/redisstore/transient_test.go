package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore/redisstore"
)

// errorReply is an error reply as go-redis returns it (a redis.Error).
type errorReply string

func (e errorReply) Error() string { return string(e) }
func (errorReply) RedisError()     {}

func TestTransient(t *testing.T) {
	reply := func(text string) error { return errorReply(text) }
	for _, c := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"nil", nil, false},
		// Permanent: the request's own data is at fault.
		{"a value too large", reply("ERR string exceeds maximum allowed size (proto-max-bulk-len)"), false},
		// Transient: a retry may succeed, or nothing says it cannot (an
		// unknown error, a bug, is transient).
		{"an unknown error", errors.New("handler bug"), true},
		{"WRONGTYPE (a bug)", reply("WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{"ERR script error", reply("ERR user_script:1: Script attempted to access nonexistent global variable"), true},
		{"LOADING", reply("LOADING Redis is loading the dataset in memory"), true},
		{"READONLY", fmt.Errorf("set: %w", reply("READONLY You can't write against a read only replica.")), true},
		{"CLUSTERDOWN", reply("CLUSTERDOWN The cluster is down"), true},
		{"TRYAGAIN", reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"OOM", reply("OOM command not allowed when used memory > 'maxmemory'."), true},
		{"client closed", redis.ErrClosed, true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"context deadline", context.DeadlineExceeded, true},
		{"EOF", io.EOF, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
	} {
		if got := redisstore.Transient(c.err); got != c.transient {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.transient)
		}
	}
}
