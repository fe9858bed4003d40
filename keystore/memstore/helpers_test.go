package memstore_test

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// claimed is a Claim's result with the token it was sent with, when it
// acquired the key (zero otherwise).
type claimed struct {
	keystore.Claim
	Token keystore.Token
}

// claimNew claims key with a fresh token.
func claimNew(s keystore.Store, ctx context.Context, key string, fp keystore.Fingerprint, lease time.Duration) (claimed, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok})
	r := claimed{Claim: c}
	if err == nil && c.Acquired {
		r.Token = tok
	}
	return r, err
}

// completeRec completes key with rec, encoded.
func completeRec(s keystore.Store, ctx context.Context, key string, tok keystore.Token, rec keystore.Record, retention time.Duration) error {
	return s.Complete(ctx, key, tok, keystore.AppendRecord(nil, rec), retention)
}

// extendLease extends key's lease, ignoring the lease that remained.
func extendLease(s keystore.Store, ctx context.Context, key string, tok keystore.Token, lease time.Duration) error {
	_, err := s.Extend(ctx, key, tok, lease)
	return err
}
