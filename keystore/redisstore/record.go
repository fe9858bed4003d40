package redisstore

import (
	"encoding/binary"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/geoidem/geoidem/keystore"
)

// A record is encoded as
//
//	status   varint (zigzag, as encoding/binary.AppendVarint)
//	fields   uvarint: the number of header fields
//	per field, in name order:
//	  name     uvarint length, bytes
//	  values   uvarint count; per value: uvarint length, bytes
//	body     every remaining byte
//
// so a typical JSON answer costs a few bytes more than its body and header
// text, and the body is stored byte for byte (no base64, no escaping). Equal
// records have equal encodings (the fields are sorted), so the complete
// script can tell a repeated Complete by comparing bytes.

var errCorrupt = errors.New("redisstore: corrupt record")

// appendRecord appends the encoding of rec to dst.
func appendRecord(dst []byte, rec keystore.Record) []byte {
	dst = binary.AppendVarint(dst, int64(rec.StatusCode))
	dst = binary.AppendUvarint(dst, uint64(len(rec.Header)))
	for _, name := range slices.Sorted(maps.Keys(rec.Header)) {
		values := rec.Header[name]
		dst = appendString(dst, name)
		dst = binary.AppendUvarint(dst, uint64(len(values)))
		for _, v := range values {
			dst = appendString(dst, v)
		}
	}
	return append(dst, rec.Body...)
}

// recordSize bounds the length of rec's encoding from above.
func recordSize(rec keystore.Record) int {
	n := 2 * binary.MaxVarintLen64
	for name, values := range rec.Header {
		n += 2*binary.MaxVarintLen64 + len(name)
		for _, v := range values {
			n += binary.MaxVarintLen64 + len(v)
		}
	}
	return n + len(rec.Body)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeRecord decodes an encoded record. The result shares no memory with
// b: its strings and body are fresh copies.
func decodeRecord(b string) (keystore.Record, error) {
	d := decoder{b: b}
	status := d.varint()
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		return keystore.Record{}, errCorrupt
	}
	rec := keystore.Record{StatusCode: int(status)}
	if n > 0 {
		rec.Header = make(http.Header, n)
	}
	for range n {
		name := d.string()
		m := d.uvarint()
		if d.err != nil || m > uint64(len(d.b)) {
			return keystore.Record{}, errCorrupt
		}
		values := make([]string, m)
		for i := range values {
			values[i] = d.string()
		}
		if d.err != nil {
			return keystore.Record{}, errCorrupt
		}
		rec.Header[name] = values
	}
	if len(d.b) > 0 {
		rec.Body = []byte(d.b)
	}
	return rec, nil
}

type decoder struct {
	b   string
	err error
}

func (d *decoder) uvarint() uint64 {
	var x uint64
	var s uint
	for i := 0; i < len(d.b) && i < binary.MaxVarintLen64; i++ {
		c := d.b[i]
		if c < 0x80 {
			d.b = d.b[i+1:]
			return x | uint64(c)<<s
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	d.err = errCorrupt
	return 0
}

func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// string returns a copy of the next length-prefixed string, so that a small
// header value never pins a large reply in memory.
func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errCorrupt
		return ""
	}
	s := strings.Clone(d.b[:n])
	d.b = d.b[n:]
	return s
}
