package memstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// A client that fills its share is refused with a FullError that names the
// client and says when its room frees; another client still claims.
func TestClientShare(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 100, MaxClientEntries: 10})
	a := keystore.ContextWithClient(context.Background(), "a")
	for i := range 10 {
		c, err := s.Claim(a, "a"+strconv.Itoa(i), fp, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(a, "a"+strconv.Itoa(i), c.Token, keystore.Record{StatusCode: 201}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Claim(a, "a-more", fp, time.Minute)
	var fe *keystore.FullError
	if !errors.As(err, &fe) || !errors.Is(err, keystore.ErrStoreFull) || !fe.Client || fe.RetryAfter < 59*time.Minute || fe.RetryAfter > time.Hour {
		t.Fatalf("Claim past the client's share: %v (%+v), want a client FullError with RetryAfter about 1h", err, fe)
	}
	b := keystore.ContextWithClient(context.Background(), "b")
	if c, err := s.Claim(b, "b0", fp, time.Minute); err != nil || c.State != keystore.Acquired {
		t.Fatalf("another client's claim: %v %v, want acquired", c.State, err)
	}
	// The whole store full: RetryAfter from the earliest entry to free.
	small := memstore.New(memstore.Config{MaxEntries: 1})
	if _, err := small.Claim(context.Background(), "x", fp, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = small.Claim(context.Background(), "y", fp, time.Minute)
	if !errors.As(err, &fe) || fe.Client || fe.RetryAfter <= 0 || fe.RetryAfter > time.Minute {
		t.Fatalf("Claim in a full store: %v (%+v), want a FullError with RetryAfter within the lease", err, fe)
	}
}
