package memstore

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
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

// refIDOf is idOf one digit at a time: the reference idOf must agree with.
func refIDOf(key string) keyID {
	var id keyID
	if len(key) != 2*len(id) {
		return sha256.Sum256([]byte(key))
	}
	val := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	for i := range id {
		hi, ok1 := val(key[2*i])
		lo, ok2 := val(key[2*i+1])
		if !ok1 || !ok2 {
			return sha256.Sum256([]byte(key))
		}
		id[i] = hi<<4 | lo
	}
	return id
}

// Every byte value, at every place of a key, gives the reference's ID.
func TestIDOfEveryByte(t *testing.T) {
	sum := sha256.Sum256([]byte("base"))
	base := []byte(hex.EncodeToString(sum[:]))
	decoded := 0
	for pos := range base {
		for c := range 256 {
			k := append([]byte(nil), base...)
			k[pos] = byte(c)
			got, want := idOf(string(k)), refIDOf(string(k))
			if got != want {
				t.Fatalf("idOf(%q) = %x, want %x", k, got, want)
			}
			if want != keyID(sha256.Sum256(k)) {
				decoded++
			}
		}
	}
	if decoded != 64*16 {
		t.Fatalf("%d keys decoded, want every lowercase digit at every place: %d", decoded, 64*16)
	}
}

func BenchmarkIDOf(b *testing.B) {
	sum := sha256.Sum256([]byte("k"))
	key := hex.EncodeToString(sum[:])
	for b.Loop() {
		sink = idOf(key)
	}
}

var sink keyID

// Keys of 64 bytes drawn from the digits, the letters around them and
// bytes with the high bit, many at once, give the reference's ID: idOf
// works eight bytes at a time, so a byte must never change its
// neighbours' verdict.
func TestIDOfMixed(t *testing.T) {
	const alphabet = "0123456789abcdefABCDEFgG/:`@\x00\x7f\x80\xb0\xe1\xff"
	rng := rand.New(rand.NewPCG(1, 2))
	k := make([]byte, 64)
	decoded := 0
	for range 200_000 {
		for i := range k {
			if rng.IntN(8) == 0 {
				k[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				k[i] = "0123456789abcdef"[rng.IntN(16)]
			}
		}
		if got, want := idOf(string(k)), refIDOf(string(k)); got != want {
			t.Fatalf("idOf(%q) = %x, want %x", k, got, want)
		}
		if refIDOf(string(k)) != keyID(sha256.Sum256(k)) {
			decoded++
		}
	}
	if decoded == 0 || decoded == 200_000 {
		t.Fatalf("%d of the keys decoded: the test exercises one path only", decoded)
	}
}
