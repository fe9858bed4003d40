package geojson

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestSpecialBytes holds specialBytes against a byte-by-byte scan: for
// every byte value at every position among plain bytes, and for random
// words, the lowest set bit marks the first quote, backslash, control
// character or byte at or above 0x80.
func TestSpecialBytes(t *testing.T) {
	first := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				return i
			}
		}
		return 8
	}
	check := func(b []byte) {
		m := specialBytes(binary.LittleEndian.Uint64(b))
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if want := first(b); got != want {
			t.Fatalf("%q: first special byte at %d, want %d", b, got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			check(b)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	special := []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff}
	for range 200000 {
		var b [8]byte
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = special[rng.IntN(len(special))]
			} else {
				b[i] = byte(rng.Uint32())
			}
		}
		check(b[:])
	}
}
