package testkit_test

import (
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// The shared servers' addresses: the defaults scripts/services starts, or
// the environment's, as host:port or as a redis:// URL.
func TestSharedAddresses(t *testing.T) {
	for _, tc := range []struct {
		redis, valkey                    string
		redisAddr, valkeyAddr, valkeyURL string
	}{
		{"", "", "127.0.0.1:6379", "127.0.0.1:6380", "redis://127.0.0.1:6380/0"},
		{"127.0.0.1:6390", "127.0.0.1:6391", "127.0.0.1:6390", "127.0.0.1:6391", "redis://127.0.0.1:6391/0"},
		{"redis://127.0.0.1:6390/2", "redis://127.0.0.1:6391/3", "127.0.0.1:6390", "127.0.0.1:6391", "redis://127.0.0.1:6391/3"},
	} {
		t.Setenv(testkit.SharedEnv, tc.redis)
		t.Setenv(testkit.SharedValkeyEnv, tc.valkey)
		if got := testkit.SharedAddr(); got != tc.redisAddr {
			t.Errorf("%s=%q: SharedAddr() = %q, want %q", testkit.SharedEnv, tc.redis, got, tc.redisAddr)
		}
		if got := testkit.SharedValkeyAddr(); got != tc.valkeyAddr {
			t.Errorf("%s=%q: SharedValkeyAddr() = %q, want %q", testkit.SharedValkeyEnv, tc.valkey, got, tc.valkeyAddr)
		}
		if got := testkit.SharedValkeyURL(); got != tc.valkeyURL {
			t.Errorf("%s=%q: SharedValkeyURL() = %q, want %q", testkit.SharedValkeyEnv, tc.valkey, got, tc.valkeyURL)
		}
	}
}
