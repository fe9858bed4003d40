package memstore

import (
	"encoding/binary"
	"net/http"
	"unsafe"

	"github.com/geoidem/geoidem/keystore"
)

// A record is held as one byte slice, its keystore record encoding (see
// keystore.AppendRecord), not as a tree of maps, slices and strings: the
// garbage collector never scans it, and its size is exactly what it costs.

func encodeRecord(r keystore.Record) []byte {
	return keystore.AppendRecord(make([]byte, 0, keystore.RecordLen(r)), r)
}

// decodeRecord reverses encodeRecord; the result shares nothing with b.
// b was checked by keystore.CheckRecord when it was stored (Complete), so
// it is well formed.
//
// It allocates less than keystore.DecodeRecord, which it agrees with: one
// string holds every header name and value (each a substring of it), in
// the same allocation as the body, one slice backs every field's values,
// then the map.
func decodeRecord(b []byte) keystore.Record {
	status, n := binary.Varint(b)
	if n <= 0 {
		panic("memstore: corrupt record") // unreachable: see above
	}
	// First pass: where the header ends, and how many values it has.
	off := n
	next := func() int { // a uvarint at off
		x, k := binary.Uvarint(b[off:])
		if k <= 0 || x > uint64(len(b)-off-k) {
			panic("memstore: corrupt record") // unreachable: see above
		}
		off += k
		return int(x)
	}
	fields := next()
	headerStart := off
	values := 0
	for range fields {
		off += next() // the name
		c := next()
		values += c
		for range c {
			off += next()
		}
	}
	rec := keystore.Record{StatusCode: int(status)}
	if fields == 0 {
		if body := b[off:]; len(body) > 0 {
			rec.Body = make([]byte, len(body))
			copy(rec.Body, body)
		}
		return rec
	}
	// Second pass: the header, its strings cut from one copy of its bytes,
	// which the body follows in the same allocation. The body's capacity
	// ends at its length and the strings lie before it, so nothing the
	// caller does with the body (which it owns) can reach them.
	end := off
	buf := append([]byte(nil), b[headerStart:]...)
	text := unsafe.String(&buf[0], end-headerStart)
	if len(buf) > len(text) {
		rec.Body = buf[len(text):len(buf):len(buf)]
	}
	all := make([]string, values)
	h := make(http.Header, fields)
	off = headerStart
	str := func() string {
		l := next()
		s := text[off-headerStart : off-headerStart+l]
		off += l
		return s
	}
	for range fields {
		name := str()
		c := next()
		vs := all[:c:c]
		all = all[c:]
		for i := range vs {
			vs[i] = str()
		}
		h[name] = vs
	}
	rec.Header = h
	return rec
}
