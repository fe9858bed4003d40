package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// The retry of a key its client released (a 5xx, released by the
// middleware) is never refused for the client's bound: not even for a
// client past it under contention.
func TestRetryOfReleasedKeyPastBound(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 100, ClientKeys: 1})
	contend(t, s, 80)
	c, tok, err := claimSmall(s, "a", "a-held", time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("the client's key in flight: %v %v", c.State, err)
	}
	for round := range 3 {
		if err := s.Release(context.Background(), "a-held", tok); err != nil {
			t.Fatal(err)
		}
		c, tok, err = claimSmall(s, "a", "a-held", time.Minute)
		if err != nil || !c.Acquired {
			t.Fatalf("round %d: the retry of the client's released key, past its bound under contention: %v %v, want acquired", round+1, c.State, err)
		}
	}
	var fe *keystore.FullError
	if _, _, err := claimSmall(s, "a", "a-new", time.Minute); !errors.As(err, &fe) || !fe.Client {
		t.Fatalf("a new key of the client past its bound: %v, want a client FullError", err)
	}
}
