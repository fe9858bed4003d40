package memstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestIDOf(t *testing.T) {
	sum := sha256.Sum256([]byte("k"))
	lower := hex.EncodeToString(sum[:])
	if got := idOf(lower); got != keyID(sum) {
		t.Errorf("idOf(%s) = %x, want the bytes it spells", lower, got)
	}
	for _, key := range []string{
		"k",
		strings.ToUpper(lower), // "AB" and "ab" must not share an ID
		lower[:63] + "g",
		lower[:62] + "\xff0",
		"/" + lower[1:], // '0'-1
		":" + lower[1:], // '9'+1
		"`" + lower[1:], // 'a'-1
		lower[:63],
		lower + "0",
	} {
		if got, want := idOf(key), keyID(sha256.Sum256([]byte(key))); got != want {
			t.Errorf("idOf(%q) = %x, want its SHA-256 %x", key, got, want)
		}
	}
}
