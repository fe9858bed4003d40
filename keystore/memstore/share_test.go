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
	ctx := context.Background()
	claimFor := func(client, key string) (keystore.Claim, keystore.Token, error) {
		tok := keystore.NewToken()
		c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: tok, Client: client})
		return c, tok, err
	}
	for i := range 10 {
		_, tok, err := claimFor("a", "a"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := completeRec(s, ctx, "a"+strconv.Itoa(i), tok, keystore.Record{StatusCode: 201}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := claimFor("a", "a-more")
	var fe *keystore.FullError
	if !errors.As(err, &fe) || !errors.Is(err, keystore.ErrStoreFull) || !fe.Client || fe.RetryAfter < 59*time.Minute || fe.RetryAfter > time.Hour {
		t.Fatalf("Claim past the client's share: %v (%+v), want a client FullError with RetryAfter about 1h", err, fe)
	}
	if c, _, err := claimFor("b", "b0"); err != nil || !c.Acquired {
		t.Fatalf("another client's claim: %v %v, want acquired", c.State, err)
	}
	// The whole store full: RetryAfter from the earliest entry to free.
	small := memstore.New(memstore.Config{MaxEntries: 1})
	if _, err := claimNew(small, ctx, "x", fp, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = claimNew(small, ctx, "y", fp, time.Minute)
	if !errors.As(err, &fe) || fe.Client || fe.RetryAfter <= 0 || fe.RetryAfter > time.Minute {
		t.Fatalf("Claim in a full store: %v (%+v), want a FullError with RetryAfter within the lease", err, fe)
	}
}
