package keystore

import (
	"crypto/rand"
	"encoding/binary"
)

// NewToken returns a fresh token for [ClaimArgs.Token]: 63 bits from
// crypto/rand, never zero, so that it fits every store's token column
// (pgstore's is a positive bigint). Two claims of one key share a token with
// probability 2⁻⁶³, which keeps the fencing rule with overwhelming
// probability; a token from anywhere else must be as unpredictable and as
// unlikely to repeat.
func NewToken() Token {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
		if t := Token(binary.BigEndian.Uint64(b[:]) >> 1); t != 0 {
			return t
		}
	}
}
