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
	bad := byte(0)
	for i := range id {
		hi, lo := hexValue[key[2*i]], hexValue[key[2*i+1]]
		bad |= hi | lo
		id[i] = hi<<4 | lo&0x0f
	}
	if bad&0xf0 != 0 { // only lowercase digits: "AB" and "ab" must not share an ID
		return sha256.Sum256([]byte(key))
	}
	return id
}

// hexValue is the value of each lowercase hexadecimal digit, and 0xff for
// every other byte.
var hexValue = func() (t [256]byte) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = byte(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()
