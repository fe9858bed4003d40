package memstore

import (
	"crypto/sha256"
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
	for i := range id {
		hi, ok1 := lowerHex(key[2*i])
		lo, ok2 := lowerHex(key[2*i+1])
		if !ok1 || !ok2 { // only lowercase digits: "AB" and "ab" must not share an ID
			return sha256.Sum256([]byte(key))
		}
		id[i] = hi<<4 | lo
	}
	return id
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
