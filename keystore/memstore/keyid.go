package memstore

import (
	"crypto/sha256"
	"encoding/binary"
)

// keyID identifies a key in the index: the 32 bytes that a 64-character
// hexadecimal key (what the middleware passes) spells, or the SHA-256 of any
// other key. Telling two keys apart by their IDs would take a SHA-256
// preimage.
type keyID [32]byte

func idOf(key string) keyID {
	var id keyID
	if len(key) != 2*len(id) {
		return sha256.Sum256([]byte(key))
	}
	// Eight digits at a time, one in each byte of a word. No step below
	// carries from a byte into the next: every byte stays under 0x100.
	const (
		ones = 0x0101010101010101
		high = 0x80 * ones
	)
	var bad uint64
	for g := range len(id) / 4 {
		s := key[8*g : 8*g+8]
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		// A digit's value is its low four bits, a letter's those plus 9
		// (bit 6 tells them apart): v is each byte's value, at most 24.
		v := x&(0x0f*ones) + 9*(x>>6&ones)
		// The byte is a lowercase digit exactly when v is at most 15 and
		// spells the byte again ('0'+v under 10, 'a'+v-10 from 10): "AB"
		// and "ab" must not share an ID.
		letter := (v + 6*ones) >> 4 & ones
		spelled := v + '0'*ones + ('a'-'0'-10)*letter
		bad |= spelled ^ x | (v+(0x80-16)*ones)&high
		// Then each pair of digits makes a byte.
		p := (v&0x000f000f000f000f)<<4 | v>>8&0x000f000f000f000f
		p = (p | p>>8) & 0x0000ffff0000ffff
		binary.LittleEndian.PutUint32(id[4*g:], uint32(p|p>>16))
	}
	if bad != 0 {
		return sha256.Sum256([]byte(key))
	}
	return id
}
