package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// The tests in this file run the store on Valkey 8, the fork of Redis 7.2
// that many managed "Redis" services now run: the shared Valkey of these
// machines (scripts/services starts valkey-server 8.0 from Debian's
// bookworm-backports on 127.0.0.1:6380), or $GEOIDEM_TEST_VALKEY.
var valkeyAddr = testkit.SharedValkeyAddr()

// minValkeyMajor is the oldest Valkey these tests accept: 8.0, the one
// without SET IFEQ, where the store's fencing is all Lua.
const minValkeyMajor = 8

// valkeyClient returns a client of the shared Valkey, failing the test
// (never skipping it) when it cannot be reached or is not Valkey 8 or
// later: a Redis answering on Valkey's port would pass every test here and
// prove nothing about Valkey.
func valkeyClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: valkeyAddr})
	t.Cleanup(func() { c.Close() })
	ping(t, c, valkeyAddr)
	name, version := serverName(t, c)
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); name != "valkey" || err != nil || n < minValkeyMajor {
		t.Fatalf("the server at %s ($%s) is %s %s, want valkey %d or later (scripts/services starts one)",
			valkeyAddr, testkit.SharedValkeyEnv, name, version, minValkeyMajor)
	}
	return c
}

// serverName returns the server's name and version from INFO server:
// "valkey" and valkey_version on Valkey, "redis" and redis_version on
// Redis (which has no server_name field).
func serverName(t testing.TB, c *redis.Client) (name, version string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	if fields["server_name"] == "valkey" {
		return "valkey", fields["valkey_version"]
	}
	return "redis", fields["redis_version"]
}

func onValkey(t testing.TB) redis.UniversalClient { return valkeyClient(t) }

// The conformance suite on Valkey 8, with and without auto-pipelining.
func TestConformanceValkey(t *testing.T) { conformance(t, onValkey) }

// Every key's history under concurrent clients is linearizable on Valkey.
func TestLinearizableValkey(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		c := valkeyClient(t)
		s := newStore(t, c, c, cfg)
		testkit.CoverAllCases(t, keystoretest.LinearizableConfig{}, func(lc keystoretest.LinearizableConfig) (keystoretest.LinearizableStats, string) {
			st := linearizable(t, s, lc)
			return st, testkit.MissedCases(st)
		})
	})
}

// The same through a path to Valkey that is cut and stalled over and over,
// with go-redis's retries off: calls whose outcome is unknown, released by
// their tokens.
func TestLinearizableFaultsValkey(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		c, _, faults := faultyClient(t, valkeyAddr, -1)
		s := newStore(t, c, valkeyClient(t), cfg)
		st := linearizable(t, s, keystoretest.LinearizableConfig{Duration: 3 * time.Second, Faults: faults})
		if st.Unknown == 0 || st.Acquired == 0 {
			t.Errorf("the faults made no call's outcome unknown, or nothing was acquired: %v", st)
		}
	})
}

// New reads Valkey's persistence as it reads Redis's (CONFIG GET
// appendonly, appendfsync and save): it refuses a Valkey that keeps
// nothing, and accepts one with an fsynced append-only file under
// RequireAOF. Each server is the test's own, so the verdicts do not depend
// on how the shared Valkey is configured.
func TestNewReadsValkeyDurability(t *testing.T) {
	t.Parallel()
	c := privateClient(t, privateValkey(t, testkit.RedisOptions{}))
	if _, err := redisstore.New(c, redisstore.Config{}); !errors.Is(err, redisstore.ErrNotDurable) {
		t.Errorf("New on a Valkey without persistence = %v, want an error wrapping ErrNotDurable", err)
	}
	c = privateClient(t, privateValkey(t, testkit.RedisOptions{AppendFsync: "always"}))
	if _, err := redisstore.New(c, redisstore.Config{Durability: redisstore.RequireAOF}); err != nil {
		t.Errorf("New(RequireAOF) on a Valkey with appendfsync always = %v, want nil", err)
	}
}

// The same on a Valkey of the test's own whose script cache is flushed and
// whose clients' connections are killed again and again: the EVALSHA to
// EVAL fallback on Valkey.
func TestLinearizableScriptFlushAndClientKillValkey(t *testing.T) {
	linearizableScriptFlushAndClientKill(t, func(t *testing.T) *redisServer { return privateValkey(t, testkit.RedisOptions{}) })
}
