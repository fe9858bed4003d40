package testkit

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Claimed is a Claim's result with the token it was sent with when it
// acquired the key, the zero Token otherwise.
type Claimed struct {
	keystore.Claim
	Token keystore.Token
}

// Claim claims key in s for a fresh token (keystore.NewToken), as the
// middleware claims.
func Claim(ctx context.Context, s keystore.Store, key string, fp keystore.Fingerprint, lease time.Duration) (Claimed, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok})
	if err != nil || !c.Acquired {
		tok = 0
	}
	return Claimed{Claim: c, Token: tok}, err
}

// Decoded is the record that enc, a Claim's Record, encodes; the zero
// Record when enc is not a record encoding.
func Decoded(enc []byte) record.Record {
	rec, _ := record.Decode(enc)
	return rec
}
