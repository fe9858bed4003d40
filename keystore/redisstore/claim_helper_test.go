package redisstore_test

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// claimed is a Claim's result with the token the Claim was sent with: the
// caller's own, which holds the key when the Claim acquired it.
type claimed struct {
	keystore.Claim
	Token keystore.Token
}

// newClaim claims key for a fresh token (keystore.NewToken), as the
// middleware does, and returns the result with that token whether or not
// the Claim acquired the key (testkit.Claim gives the zero Token then).
func newClaim(ctx context.Context, s keystore.Store, key string, fp keystore.Fingerprint, lease time.Duration) (claimed, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok})
	return claimed{Claim: c, Token: tok}, err
}

// encode returns rec's encoding, what Store.Complete takes.
func encode(rec record.Record) []byte { return record.Append(nil, rec) }

// extend renews key's lease, ignoring the lease that remained.
func extend(ctx context.Context, s keystore.Store, key string, tok keystore.Token, lease time.Duration) error {
	_, err := s.Extend(ctx, key, tok, lease)
	return err
}
