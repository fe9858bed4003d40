package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/newest"
)

// TestRedisFeaturesWaitReplicas: with waitReplicas set, an upsert that no
// replica acknowledges fails with redisstore.ErrNotReplicated (transient:
// 503, the key released), though its write stays on the master; without,
// it succeeds. The server is one of the test's own, with no replica.
func TestRedisFeaturesWaitReplicas(t *testing.T) {
	ctx := context.Background()
	srv, err := testkit.StartRedis(ctx, testkit.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	answer := func([]newest.Verdict) Answer { return Answer{} }
	f := func(id string) []Feature {
		return []Feature{{ID: id, Raw: []byte(`{"type":"Feature","id":"` + id + `"}`)}}
	}

	waited := &redisFeatures{client: c, prefix: "t:", waitReplicas: 1, waitTimeout: 20 * time.Millisecond}
	if _, err := waited.Upsert(ctx, nil, f("a"), answer); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("upsert with no replica to acknowledge it: %v, want ErrNotReplicated", err)
	}
	if _, ok, err := waited.Get(ctx, "a"); err != nil || !ok {
		t.Errorf("the unacknowledged write is not on the master: ok %v, %v", ok, err)
	}
	plain := &redisFeatures{client: c, prefix: "t:"}
	if _, err := plain.Upsert(ctx, nil, f("b"), answer); err != nil {
		t.Fatalf("upsert without WaitReplicas: %v", err)
	}
}
