// Package record is the middleware's record: the response it replays to
// every retry, and the encoding in which it hands that response to a
// keystore.Store as opaque bytes. The stores of this module that read the
// bytes (pgstore keeps status, header and body in columns; memstore and
// redisstore check what they keep) use it too.
package record

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/http"
	"slices"

	"github.com/geoidem/geoidem/keystore"
)

// Append appends the record encoding of rec to dst and returns the
// extended buffer. The encoding is one byte string for a whole Record, for
// stores that keep records as bytes (redisstore's values, memstore's
// entries; pgstore keeps the header part in a bytea column):
//
//	status   varint (zigzag, as encoding/binary.AppendVarint)
//	header   the header encoding (see AppendHeader):
//	  fields   uvarint: the number of header fields
//	  per field, in name order (byte-wise, as slices.Sort):
//	    name     uvarint length, bytes
//	    values   uvarint count; per value, in order: uvarint length, bytes
//	body     every remaining byte, as it is
//
// A typical JSON answer costs a few bytes more than its body and header
// text, and every byte of every header value and of the body survives (no
// base64, no escaping, no UTF-8 check).
//
// Equal records have equal encodings: records that agree in status, header
// fields and values in order, and body, a nil header or body counting as
// an empty one, encode to the same bytes however their header maps were
// filled. So a store can recognise a repeated Complete by comparing bytes.
//
// The encoding is stable: redisstore and pgstore keep it in their
// databases, and every later version of this package decodes what an
// earlier one wrote ([Decode]).
//
// With room for [Len](rec) bytes in dst, Append does not
// allocate (for a header of up to 16 fields).
func Append(dst []byte, rec Record) []byte {
	dst = binary.AppendVarint(dst, int64(rec.StatusCode))
	dst = AppendHeader(dst, rec.Header)
	return append(dst, rec.Body...)
}

// Len returns the length of rec's encoding: len(Append(nil, rec)).
func Len(rec Record) int {
	s := int64(rec.StatusCode)
	return uvarintLen(uint64(s<<1)^uint64(s>>63)) + HeaderLen(rec.Header) + len(rec.Body)
}

// Decode decodes a record encoding, as [Append] writes it, from
// a byte slice or a string (a Redis reply, say). A record without header
// fields has a nil Header, and one without body bytes a nil Body. The
// record shares no memory with enc: its strings and body are copies, so
// changing enc never changes it and a small record never pins a large
// buffer. Header
// fields are accepted in any order (earlier versions of redisstore wrote
// them unsorted). Any input that is not an encoding, including a truncated
// one, yields an error wrapping [keystore.ErrCorruptRecord]; Decode never
// panics, and allocates at most in proportion to len(enc), whatever counts
// a corrupt encoding claims.
func Decode[E string | []byte](enc E) (Record, error) {
	d := decoder[E]{b: enc}
	status := d.varint()
	h := d.header()
	if d.bad {
		return Record{}, keystore.ErrCorruptRecord
	}
	rec := Record{StatusCode: int(status)}
	if len(h) > 0 {
		rec.Header = h
	}
	if len(d.b) > 0 {
		rec.Body = append([]byte(nil), d.b...)
	}
	return rec, nil
}

// Check reports whether enc is a record encoding exactly as
// [Append] writes it, header fields in name order and each name once,
// and returns its status. It returns an error wrapping [keystore.ErrCorruptRecord]
// for any other input (including a valid encoding whose fields are out of
// order or a number written in more bytes than it needs, which [Decode]
// accepts), and one wrapping [keystore.ErrInvalidStatus]
// for an encoding whose status is outside 200–599, as [Record.Validate].
// It never allocates, except for an error. A store that reads the bytes
// it is given (see keystore.Store's Complete) calls it (or [Split]) first.
func Check(enc []byte) (status int, err error) {
	status, _, _, err = Split(enc)
	return status, err
}

// Split is [Check] that also returns the encoding's parts: the
// header encoding (see [AppendHeader]) and the body, sub-slices of enc, for
// a store that keeps them apart (pgstore's header and body columns).
func Split(enc []byte) (status int, header, body []byte, err error) {
	// Each uvarint must be as short as Append writes it: decoders
	// accept longer ones, whose bytes differ from an equal record's.
	ux, n := binary.Uvarint(enc)
	if n <= 0 || n != uvarintLen(ux) {
		return 0, nil, nil, keystore.ErrCorruptRecord
	}
	s := int64(ux >> 1)
	if ux&1 != 0 {
		s = ^s
	}
	headerAt := n
	b := enc[n:]
	fields, n := countAt(b)
	if n == 0 || n != uvarintLen(uint64(fields)) {
		return 0, nil, nil, keystore.ErrCorruptRecord
	}
	b = b[n:]
	var prev []byte
	for i := range fields {
		c, n := countAt(b)
		if n == 0 || n != uvarintLen(uint64(c)) {
			return 0, nil, nil, keystore.ErrCorruptRecord
		}
		name := b[n : n+c]
		b = b[n+c:]
		if i > 0 && string(prev) >= string(name) {
			return 0, nil, nil, keystore.ErrCorruptRecord
		}
		prev = name
		values, n := countAt(b)
		if n == 0 || n != uvarintLen(uint64(values)) {
			return 0, nil, nil, keystore.ErrCorruptRecord
		}
		b = b[n:]
		for range values {
			c, n := countAt(b)
			if n == 0 || n != uvarintLen(uint64(c)) {
				return 0, nil, nil, keystore.ErrCorruptRecord
			}
			b = b[n+c:]
		}
	}
	if s < MinStatusCode || s > MaxStatusCode {
		return int(s), nil, nil, fmt.Errorf("%w: %d", keystore.ErrInvalidStatus, s)
	}
	bodyAt := len(enc) - len(b)
	return int(s), enc[headerAt:bodyAt:bodyAt], enc[bodyAt:], nil
}

// countAt reads, at the front of b, a uvarint that counts items of at
// least one byte each, and so at most the bytes after it, as
// decoder.count does: it returns the count and the uvarint's length, or
// a length of 0 when b holds no such count. A count below 128 (one byte:
// most lengths and counts) is read inline.
func countAt(b []byte) (c, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		if c = int(b[0]); c < len(b) {
			return c, 1
		}
		return 0, 0
	}
	x, n := binary.Uvarint(b)
	if n <= 0 || x > uint64(len(b)-n) {
		return 0, 0
	}
	return int(x), n
}

// AppendHeader appends the header encoding of h, the part of a record
// encoding between status and body, to dst and returns the extended buffer.
// A nil header and an empty one have the same encoding; a store that must
// tell them apart stores the nil one differently (pgstore: as NULL). With
// room for [HeaderLen](h) bytes in dst it does not allocate for a header of
// up to 16 fields.
func AppendHeader(dst []byte, h http.Header) []byte {
	var buf [16]string
	names := buf[:0]
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, name := range names {
		dst = AppendHeaderField(dst, name, h[name])
	}
	return dst
}

// AppendHeaderField appends one field of a header encoding to dst and
// returns the extended buffer. A header encoding is the number of fields,
// as [encoding/binary.AppendUvarint] writes it, then each field in name
// order: a caller that writes a header that way, field by field without
// building an [http.Header], writes what [AppendHeader] does.
func AppendHeaderField(dst []byte, name string, values []string) []byte {
	dst = appendString(dst, name)
	dst = binary.AppendUvarint(dst, uint64(len(values)))
	for _, v := range values {
		dst = appendString(dst, v)
	}
	return dst
}

// HeaderLen returns the length of h's header encoding: len(AppendHeader(nil, h)).
func HeaderLen(h http.Header) int {
	n := uvarintLen(uint64(len(h)))
	for name, values := range h {
		n += stringLen(name) + uvarintLen(uint64(len(values)))
		for _, v := range values {
			n += stringLen(v)
		}
	}
	return n
}

// DecodeHeader decodes a header encoding, as [AppendHeader] writes it, that
// fills all of enc, a byte slice or a string. The header is never nil, and
// shares no memory with enc.
// Input that is not a header encoding, including one followed by other
// bytes, yields an error wrapping [keystore.ErrCorruptRecord].
func DecodeHeader[E string | []byte](enc E) (http.Header, error) {
	d := decoder[E]{b: enc}
	h := d.header()
	if d.bad || len(d.b) > 0 {
		return nil, keystore.ErrCorruptRecord
	}
	if h == nil {
		h = http.Header{}
	}
	return h, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func stringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// uvarintLen returns the length of x's uvarint encoding.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// decoder reads the parts of an encoding, a string (a Redis reply) or a
// byte slice, from the front of b. After the first error it sets bad and
// returns zero values.
type decoder[E string | []byte] struct {
	b   E
	bad bool
}

// uvarint reads a uvarint, as encoding/binary.Uvarint.
func (d *decoder[E]) uvarint() uint64 {
	var x uint64
	var s uint
	for i := 0; i < len(d.b) && i < binary.MaxVarintLen64; i++ {
		c := d.b[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // overflow
			}
			d.b = d.b[i+1:]
			return x | uint64(c)<<s
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	d.bad = true
	return 0
}

// varint reads a zigzag varint, as encoding/binary.Varint.
func (d *decoder[E]) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// count reads a uvarint that counts items of at least one byte each, so it
// is at most the bytes left: a corrupt count can never make the decoder
// allocate more than the input's size.
func (d *decoder[E]) count() int {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return 0
	}
	return int(n)
}

// string returns a copy of the next length-prefixed string.
func (d *decoder[E]) string() string {
	n := d.count()
	if d.bad {
		return ""
	}
	s := string([]byte(d.b[:n])) // a copy even when E is string, where string(…) would share
	d.b = d.b[n:]
	return s
}

// header reads a header encoding; it returns nil for zero fields.
func (d *decoder[E]) header() http.Header {
	fields := d.count()
	if d.bad || fields == 0 {
		return nil
	}
	h := make(http.Header, fields)
	for range fields {
		name := d.string()
		values := make([]string, d.count())
		for i := range values {
			values[i] = d.string()
		}
		if d.bad {
			return nil
		}
		h[name] = values
	}
	return h
}

// Record is a recorded response: what the middleware replays to every retry.
type Record struct {
	// StatusCode is the HTTP status of the response: a final status, from
	// MinStatusCode to MaxStatusCode (200–599).
	StatusCode int
	// Header holds the response headers chosen for replay. It may be nil.
	Header http.Header
	// Body is the response body, byte for byte. It may be nil.
	Body []byte
}

// Clone returns a deep copy of r.
func (r Record) Clone() Record {
	c := Record{StatusCode: r.StatusCode}
	if r.Header != nil {
		c.Header = r.Header.Clone()
	}
	if r.Body != nil {
		c.Body = append(make([]byte, 0, len(r.Body)), r.Body...)
	}
	return c
}

// The status codes a Record may carry: final HTTP responses only. A record
// with any other status could not be replayed (net/http refuses to write a
// status below 100, and a 1xx is not a final answer).
const (
	MinStatusCode = 200
	MaxStatusCode = 599
)

// Validate returns nil if r can be stored and replayed, and otherwise an
// error wrapping keystore.ErrInvalidStatus that names the status code.
func (r Record) Validate() error {
	if r.StatusCode < MinStatusCode || r.StatusCode > MaxStatusCode {
		return fmt.Errorf("%w: %d", keystore.ErrInvalidStatus, r.StatusCode)
	}
	return nil
}

// Fit returns what to record for a response rec under a bound of max
// bytes (its encoding's length; zero: no bound): rec itself when it fits,
// else [TooLarge] of its status, as the middleware records a response too
// large to keep (keystore.Hold.MaxRecordBytes).
func Fit(max int, rec Record) Record {
	if max > 0 && Len(rec) > max {
		return TooLarge(rec.StatusCode)
	}
	return rec
}
