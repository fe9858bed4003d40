package middleware

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// TestEncodeHex checks encodeHex against encoding/hex on every byte value
// in every position and on random sums.
func TestEncodeHex(t *testing.T) {
	check := func(src [sha256.Size]byte) {
		t.Helper()
		var got [2 * sha256.Size]byte
		encodeHex(&got, &src)
		if want := hex.EncodeToString(src[:]); string(got[:]) != want {
			t.Fatalf("encodeHex(%x) = %s", src, got)
		}
	}
	for b := range 256 {
		var src [sha256.Size]byte
		for i := range src {
			src[i] = byte(b + i)
		}
		check(src)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		var src [sha256.Size]byte
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		check(src)
	}
}
