package memstore

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"slices"

	"github.com/geoidem/geoidem/keystore"
)

// A record is held as one byte slice (status, headers, body), not as a tree
// of maps, slices and strings: the garbage collector never scans it, and its
// size is exactly what it costs.
//
//	uvarint status, uvarint fields, per field: name, uvarint values, values…; body
//
// where every string is a uvarint length and its bytes.

func encodeRecord(r keystore.Record) []byte {
	n := 2*binary.MaxVarintLen64 + len(r.Body)
	for k, vs := range r.Header {
		n += 2*binary.MaxVarintLen64 + len(k)
		for _, v := range vs {
			n += binary.MaxVarintLen64 + len(v)
		}
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(r.StatusCode))
	b = binary.AppendUvarint(b, uint64(len(r.Header)))
	for k, vs := range r.Header {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return append(b, r.Body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord reverses encodeRecord; the result shares nothing with b.
// b was written by encodeRecord in this process, so it is well formed.
func decodeRecord(b []byte) keystore.Record {
	status, b := uvarint(b)
	fields, b := uvarint(b)
	r := keystore.Record{StatusCode: int(status)}
	if fields > 0 {
		r.Header = make(http.Header, fields)
		for range fields {
			var name string
			name, b = str(b)
			var nv uint64
			nv, b = uvarint(b)
			vs := make([]string, nv)
			for i := range vs {
				vs[i], b = str(b)
			}
			r.Header[name] = vs
		}
	}
	if len(b) > 0 {
		r.Body = append([]byte(nil), b...)
	}
	return r
}

func uvarint(b []byte) (uint64, []byte) {
	v, n := binary.Uvarint(b)
	return v, b[n:]
}

func str(b []byte) (string, []byte) {
	n, b := uvarint(b)
	return string(b[:n]), b[n:]
}

// sameRecord reports whether data, written by encodeRecord, encodes a record
// equal to r: the same status, header fields and values in order, and body
// (nil and empty alike).
func sameRecord(data []byte, r keystore.Record) bool {
	got := decodeRecord(data)
	if got.StatusCode != r.StatusCode || !bytes.Equal(got.Body, r.Body) || len(got.Header) != len(r.Header) {
		return false
	}
	for name, vs := range r.Header {
		if !slices.Equal(got.Header[name], vs) {
			return false
		}
	}
	return true
}
