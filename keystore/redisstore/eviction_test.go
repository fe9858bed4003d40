package redisstore_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore/redisstore"
)

// logBuffer is a logger that keeps its records as text.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

func privateClient(t *testing.T, s *redisServer) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	t.Cleanup(func() { c.Close() })
	ping(t, c, s.addr)
	return c
}

// A server whose maxmemory-policy lets Redis evict keys with a TTL (every
// allkeys-* and volatile-* policy) can drop a record before its retention:
// New warns through Config.Logger, or fails with RefuseEviction.
func TestNewChecksMaxmemoryPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"ConfigGet", []string{"--maxmemory-policy", "volatile-lru"}},
		// Where CONFIG is not allowed (renamed away here, as managed
		// services do), the policy is read from INFO memory.
		{"InfoMemory", []string{"--maxmemory-policy", "volatile-lru", "--rename-command", "CONFIG", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := privateClient(t, privateServer(t, tc.extra...))
			log, buf := logBuffer()
			s, err := redisstore.New(client, redisstore.Config{Logger: log, Durability: redisstore.AcceptVolatile})
			if err != nil {
				t.Fatalf("New with the default check: %v, want a store and a warning", err)
			}
			if got := redisstore.MaxmemoryPolicy(s); got != "volatile-lru" {
				t.Errorf("MaxmemoryPolicy() = %q, want volatile-lru", got)
			}
			if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "volatile-lru") {
				t.Errorf("log after New on a volatile-lru server: %q, want a warning naming the policy", out)
			}
			_, err = redisstore.New(client, redisstore.Config{Eviction: redisstore.RefuseEviction})
			if !errors.Is(err, redisstore.ErrEvictionPolicy) || !strings.Contains(err.Error(), "volatile-lru") {
				t.Fatalf("New with RefuseEviction on a volatile-lru server: %v, want ErrEvictionPolicy naming the policy", err)
			}
			buf.Reset()
			if _, err := redisstore.New(client, redisstore.Config{Eviction: redisstore.SkipEvictionCheck, Durability: redisstore.AcceptVolatile, Logger: log}); err != nil || buf.Len() != 0 {
				t.Fatalf("New with SkipEvictionCheck: %v, log %q; want no check at all", err, buf.String())
			}
		})
	}
}

// noeviction (the shared server's, and Redis's default) passes silently,
// standalone and on every node of a Cluster.
func TestNewAcceptsNoeviction(t *testing.T) {
	t.Parallel()
	for name, client := range map[string]redis.UniversalClient{"Standalone": standaloneClient(t), "Cluster": clusterClient(t)} {
		log, buf := logBuffer()
		s, err := redisstore.New(client, redisstore.Config{Eviction: redisstore.RefuseEviction, Durability: redisstore.AcceptVolatile, Logger: log})
		if err != nil {
			t.Fatalf("%s: New with RefuseEviction on noeviction: %v", name, err)
		}
		if got := redisstore.MaxmemoryPolicy(s); got != "noeviction" {
			t.Errorf("%s: MaxmemoryPolicy() = %q, want noeviction", name, got)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: New on noeviction logged %q, want nothing", name, buf.String())
		}
	}
}

// A policy that cannot be read (Redis unreachable at New) is a warning by
// default, since the store works once Redis is back, and a failure with
// RefuseEviction, which asks for proof.
func TestNewWithUnreadablePolicy(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	log, buf := logBuffer()
	s, err := redisstore.New(client, redisstore.Config{Logger: log})
	if err != nil {
		t.Fatalf("New on an unreachable Redis with the default check: %v, want a store", err)
	}
	if redisstore.MaxmemoryPolicy(s) != "" || !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("policy %q, log %q: want no policy and a warning", redisstore.MaxmemoryPolicy(s), buf.String())
	}
	if _, err := redisstore.New(client, redisstore.Config{Eviction: redisstore.RefuseEviction}); !errors.Is(err, redisstore.ErrEvictionPolicy) {
		t.Fatalf("New on an unreachable Redis with RefuseEviction: %v, want ErrEvictionPolicy", err)
	}
}
