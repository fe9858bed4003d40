package memstore

import (
	"bytes"

	"github.com/geoidem/geoidem/keystore"
)

// A record is held as one byte slice, its keystore record encoding (see
// keystore.AppendRecord), not as a tree of maps, slices and strings: the
// garbage collector never scans it, and its size is exactly what it costs.

func encodeRecord(r keystore.Record) []byte {
	return keystore.AppendRecord(make([]byte, 0, keystore.RecordLen(r)), r)
}

// decodeRecord reverses encodeRecord; the result shares nothing with b.
// b was written by encodeRecord in this process, so it is well formed.
func decodeRecord(b []byte) keystore.Record {
	r, err := keystore.DecodeRecord(b)
	if err != nil {
		panic("memstore: " + err.Error()) // unreachable: see above
	}
	return r
}

// sameRecord reports whether data, written by encodeRecord, encodes a record
// equal to r: the same status, header fields and values in order, and body
// (nil and empty alike). Equal records have equal encodings.
func sameRecord(data []byte, r keystore.Record) bool {
	return len(data) == keystore.RecordLen(r) && bytes.Equal(data, encodeRecord(r))
}
