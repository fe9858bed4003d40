package pgstore

import (
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
)

// The header column holds a recorded http.Header in a small binary form, so
// that every byte of every value survives (a JSON or text column would
// mangle or refuse bytes that are not UTF-8, which HTTP allows in values):
//
//	uvarint(number of fields)
//	per field, in name order: uvarint(len) name, uvarint(number of values),
//	    per value, in order: uvarint(len) value
//
// A nil header is stored as NULL, an empty one as the encoding of zero
// fields.

func encodeHeader(h http.Header) []byte {
	if h == nil {
		return nil
	}
	names := make([]string, 0, len(h))
	size := binary.MaxVarintLen64
	for name, vs := range h {
		names = append(names, name)
		size += 2*binary.MaxVarintLen64 + len(name)
		for _, v := range vs {
			size += binary.MaxVarintLen64 + len(v)
		}
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		vs := h[name]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return b
}

var errHeader = errors.New("pgstore: stored header is corrupt")

func decodeHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	uvarint := func() (int, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return 0, false
		}
		b = b[w:]
		return int(n), true
	}
	str := func() (string, bool) {
		n, ok := uvarint()
		if !ok || n > len(b) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	fields, ok := uvarint()
	if !ok {
		return nil, errHeader
	}
	h := make(http.Header, fields)
	for range fields {
		name, ok := str()
		if !ok {
			return nil, errHeader
		}
		n, ok := uvarint()
		if !ok {
			return nil, errHeader
		}
		vs := make([]string, 0, n)
		for range n {
			v, ok := str()
			if !ok {
				return nil, errHeader
			}
			vs = append(vs, v)
		}
		h[name] = vs
	}
	if len(b) != 0 {
		return nil, errHeader
	}
	return h, nil
}
