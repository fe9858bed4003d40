// Package storecall writes the keystore.Store calls that the module's tests,
// its conformance suite and its benchmarks make most often as one call
// each: a Claim with a fresh token, as the middleware claims; a Complete
// of a Record, encoded as the middleware encodes it; an Extend whose
// remaining lease the caller does not need.
package storecall

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// Claimed is a Claim's result with the token it was sent with when it
// acquired the key, the zero Token otherwise.
type Claimed struct {
	keystore.Claim
	Token keystore.Token
}

// Claim claims key in s for a fresh token (keystore.NewToken).
func Claim(ctx context.Context, s keystore.Store, key string, fp keystore.Fingerprint, lease time.Duration) (Claimed, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok})
	r := Claimed{Claim: c}
	if err == nil && c.Acquired {
		r.Token = tok
	}
	return r, err
}

// Complete completes key, held by tok, with rec encoded by
// keystore.AppendRecord.
func Complete(ctx context.Context, s keystore.Store, key string, tok keystore.Token, rec keystore.Record, retention time.Duration) error {
	return s.Complete(ctx, key, tok, keystore.AppendRecord(nil, rec), retention)
}

// Extend renews key's lease for tok, and drops the lease that remained.
func Extend(ctx context.Context, s keystore.Store, key string, tok keystore.Token, lease time.Duration) error {
	_, err := s.Extend(ctx, key, tok, lease)
	return err
}
