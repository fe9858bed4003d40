package testkit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
)

// Delete removes every key under the prefix, more than one batch of them,
// and no key outside it.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: testkit.SharedAddr()})
	defer c.Close()
	prefix := fmt.Sprintf("geoidem-test:redisprefix:%d:", time.Now().UnixNano())
	outside := prefix[:len(prefix)-1] + "-outside"
	defer c.Del(ctx, outside)
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 2500 {
			p.Set(ctx, fmt.Sprint(prefix, i), "v", time.Minute)
		}
		p.Set(ctx, outside, "v", time.Minute)
		return nil
	}); err != nil {
		t.Fatalf("Redis at %s: %v", testkit.SharedAddr(), err)
	}
	if err := testkit.DeletePrefix(ctx, c, prefix); err != nil {
		t.Fatal(err)
	}
	if keys, err := c.Keys(ctx, prefix+"*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("after Delete: %d keys under the prefix (%v), want none", len(keys), err)
	}
	if n, err := c.Exists(ctx, outside).Result(); err != nil || n != 1 {
		t.Fatalf("the key outside the prefix: exists %d (%v), want it kept", n, err)
	}
}
