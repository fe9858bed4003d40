package record

import (
	"encoding/binary"
	"net/http"
	"unsafe"

	"github.com/geoidem/geoidem/keystore"
)

// View decodes a record encoding as [Decode] does, but without copying:
// the header's names and values and the body share enc's memory, so the
// caller must never change enc afterwards (a keystore.Claim's Record,
// which neither the store nor the caller may change, qualifies). It
// allocates a header map and one slice for all its values, nothing for a
// record without header fields.
func View(enc []byte) (Record, error) {
	status, fields, body, err := Scan(enc)
	if err != nil {
		return Record{}, err
	}
	rec := Record{StatusCode: status, Body: body}
	if fields.Len == 0 {
		return rec, nil
	}
	all := make([]string, fields.Values)
	rec.Header = make(http.Header, fields.Len)
	for fields.Len > 0 {
		name, vs, rest := fields.Next(all)
		all = rest
		rec.Header[name] = vs
	}
	return rec, nil
}

// Scan checks a record encoding as [View] does, and returns its status,
// its header's fields, to read one by one (Fields.Next) without building
// a header map, and its body (nil when empty), a sub-slice of enc. The
// names, values and body share enc's memory, as View's do. It never
// allocates, except for an error.
func Scan(enc []byte) (status int, fields Fields, body []byte, err error) {
	ux, n := binary.Uvarint(enc)
	if n <= 0 {
		return 0, Fields{}, nil, keystore.ErrCorruptRecord
	}
	s := int64(ux >> 1)
	if ux&1 != 0 {
		s = ^s
	}
	b := enc[n:]
	count, n := countAt(b)
	if n == 0 {
		return 0, Fields{}, nil, keystore.ErrCorruptRecord
	}
	b = b[n:]
	headerAt := len(enc) - len(b)
	values := 0
	sorted := true
	var prev []byte
	for i := range count {
		c, n := countAt(b)
		if n == 0 {
			return 0, Fields{}, nil, keystore.ErrCorruptRecord
		}
		name := b[n : n+c]
		b = b[n+c:]
		if i > 0 && string(prev) >= string(name) {
			sorted = false
		}
		prev = name
		vs, n := countAt(b)
		if n == 0 {
			return 0, Fields{}, nil, keystore.ErrCorruptRecord
		}
		b = b[n:]
		values += vs
		for range vs {
			c, n := countAt(b)
			if n == 0 {
				return 0, Fields{}, nil, keystore.ErrCorruptRecord
			}
			b = b[n+c:]
		}
	}
	if len(b) > 0 {
		body = b
	}
	return int(s), Fields{b: enc[headerAt:], Len: count, Values: values, Sorted: sorted}, body, nil
}

// Fields is the header part of a record encoding that [Scan] has checked:
// its fields, read in the encoding's order by Next.
type Fields struct {
	b      []byte
	Len    int // the fields not yet read
	Values int // the values of all the fields
	// Sorted reports whether each name is greater than the one before, as
	// Append writes them: then no name comes twice.
	Sorted bool
}

// Next reads the next field (Len must be positive): its name, and its
// values, which it puts in room's first elements (room must have Values
// left in all) and returns as a slice of their own capacity, with the rest
// of room.
func (f *Fields) Next(room []string) (name string, values, rest []string) {
	v := viewer{b: f.b}
	name = v.string()
	c := v.count()
	values = room[:c:c]
	for i := range values {
		values[i] = v.string()
	}
	f.b = v.b
	f.Len--
	return name, values, room[c:]
}

// viewer reads what Scan has already checked.
type viewer struct{ b []byte }

func (v *viewer) count() int {
	c, n := countAt(v.b)
	v.b = v.b[n:]
	return c
}

func (v *viewer) string() string {
	n := v.count()
	s := unsafe.String(unsafe.SliceData(v.b), n)
	v.b = v.b[n:]
	return s
}
