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
	// Eight digits at a time, one in each byte of a word. Adding c to a
	// byte below 0x80 sets its high bit exactly when the byte is at least
	// 0x80-c, and carries nothing into the next byte.
	const (
		ones = 0x0101010101010101
		high = 0x80 * ones
	)
	var bad uint64
	for g := range len(id) / 4 {
		s := key[8*g : 8*g+8]
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		x7 := x &^ high
		digit := (x7 + (0x80-'0')*ones) &^ (x7 + (0x80-'9'-1)*ones)  // '0' <= b <= '9'
		letter := (x7 + (0x80-'a')*ones) &^ (x7 + (0x80-'f'-1)*ones) // 'a' <= b <= 'f'
		bad |= x&high | ^(digit|letter)&high                         // only lowercase digits: "AB" and "ab" must not share an ID
		// A digit's value is its low four bits, a letter's those plus 9
		// (bit 6 tells them apart); then each pair of digits makes a byte.
		v := x&(0x0f*ones) + 9*(x>>6&ones)
		p := (v&0x000f000f000f000f)<<4 | v>>8&0x000f000f000f000f
		p = (p | p>>8) & 0x0000ffff0000ffff
		binary.LittleEndian.PutUint32(id[4*g:], uint32(p|p>>16))
	}
	if bad != 0 {
		return sha256.Sum256([]byte(key))
	}
	return id
}
