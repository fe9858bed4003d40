package keystore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
)

type claimTokenKey struct{}

// ContextWithClaimToken returns a copy of ctx that carries tok, a token
// the caller chose (with [NewClaimToken]) for the Claim it is about to
// send. A store that honours it issues tok, not a token of its own, when
// that Claim acquires the key; the stores in this module (memstore,
// redisstore, pgstore) do.
//
// It is what makes a Claim whose reply was lost harmless: a Claim that
// timed out may still have acquired the key, and its caller, which never
// learned the token, would leave the key in flight for the whole lease.
// Knowing the token in advance, the caller releases the key with it
// instead: if that Claim acquired the key, the key is free again; if not,
// the Release fails with [ErrLeaseLost] and changes nothing.
//
// tok must come from NewClaimToken (or be as unpredictable and as unlikely
// to repeat): the promise that a store never issues the same token twice
// for a key then holds with overwhelming probability, as for redisstore's
// own tokens. The zero Token means none.
func ContextWithClaimToken(ctx context.Context, tok Token) context.Context {
	return context.WithValue(ctx, claimTokenKey{}, tok)
}

// ClaimTokenFromContext returns the token a Claim's caller chose for it
// (see ContextWithClaimToken), if any. A store calls it in Claim and, when
// it returns true, issues that token if the Claim acquires the key.
func ClaimTokenFromContext(ctx context.Context) (Token, bool) {
	tok, _ := ctx.Value(claimTokenKey{}).(Token)
	return tok, tok != 0
}

// NewClaimToken returns a fresh token for ContextWithClaimToken: 63 bits
// from crypto/rand, never zero, so that it fits every store's token column
// (pgstore's is a positive bigint).
func NewClaimToken() Token {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
		if t := Token(binary.BigEndian.Uint64(b[:]) >> 1); t != 0 {
			return t
		}
	}
}
