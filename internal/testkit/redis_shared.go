package testkit

import (
	"net/url"
	"os"
	"strings"
)

// SharedEnv names the environment variable that gives the Redis the tests
// share: a redis:// URL (redis://127.0.0.1:6390/0) or host:port, on
// loopback.
const SharedEnv = "GEOIDEM_TEST_REDIS"

// SharedAddr is the host:port of the Redis the tests share (each in a key
// prefix of its own): from $GEOIDEM_TEST_REDIS, or 127.0.0.1:6379, where
// scripts/services starts one. A test must not assume anything of its
// persistence (it may keep nothing, or have an append-only file); a test
// that needs one or the other starts its own server with [Start].
func SharedAddr() string {
	return addrFrom(os.Getenv(SharedEnv), "127.0.0.1:6379")
}

// addrFrom returns the host:port of v, a redis:// URL or host:port, or def
// when v is empty.
func addrFrom(v, def string) string {
	if v == "" {
		return def
	}
	if strings.Contains(v, "://") {
		if u, err := url.Parse(v); err == nil && u.Host != "" {
			return u.Host
		}
	}
	return v
}

// SharedURL is the shared Redis as a redis:// URL: $GEOIDEM_TEST_REDIS when
// it is one, else redis://[SharedAddr]/0.
func SharedURL() string {
	if v := os.Getenv(SharedEnv); strings.Contains(v, "://") {
		return v
	}
	return "redis://" + SharedAddr() + "/0"
}

// SharedValkeyEnv names the environment variable that gives the Valkey the
// tests share, as [SharedEnv] gives the Redis: a redis:// URL or host:port,
// on loopback.
const SharedValkeyEnv = "GEOIDEM_TEST_VALKEY"

// SharedValkeyAddr is the host:port of the Valkey 8 the tests share (each
// in a key prefix of its own): from $GEOIDEM_TEST_VALKEY, or
// 127.0.0.1:6380, where scripts/services starts one (from Debian's
// bookworm-backports). Valkey speaks Redis's protocol: a go-redis client
// and redisstore use it as they use Redis.
func SharedValkeyAddr() string {
	return addrFrom(os.Getenv(SharedValkeyEnv), "127.0.0.1:6380")
}

// SharedValkeyURL is the shared Valkey as a redis:// URL, as examples/chaos
// and examples/ingest take a store (-store): $GEOIDEM_TEST_VALKEY when it
// is one, else redis://[SharedValkeyAddr]/0.
func SharedValkeyURL() string {
	if v := os.Getenv(SharedValkeyEnv); strings.Contains(v, "://") {
		return v
	}
	return "redis://" + SharedValkeyAddr() + "/0"
}
