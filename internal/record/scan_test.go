package record_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Scan reads what View reads, field by field in the encoding's order, tells
// whether the names are in Append's order, and allocates nothing.
func TestScanMatchesView(t *testing.T) {
	encs := [][]byte{[]byte("\x92\x03" + "\x02" + "\x04Link\x01\x04</a>" + "\x01A\x00" + "body")} // unsorted
	for _, g := range golden {
		encs = append(encs, unhex(t, g.record))
	}
	for i, enc := range encs {
		want, err := record.View(enc)
		if err != nil {
			t.Fatal(err)
		}
		status, fields, body, err := record.Scan(enc)
		if err != nil || status != want.StatusCode || string(body) != string(want.Body) || (body == nil) != (want.Body == nil) {
			t.Errorf("Scan(%x) = %d, %q, %v; want %d, %q", enc, status, body, err, want.StatusCode, want.Body)
		}
		if (fields.Sorted && fields.Len != len(want.Header)) || fields.Sorted != (i > 0) {
			t.Errorf("Scan(%x): %d fields, sorted %v; want %d, %v", enc, fields.Len, fields.Sorted, len(want.Header), i > 0)
		}
		room := make([]string, fields.Values)
		var prev string
		for n := 0; fields.Len > 0; n++ {
			name, vs, rest := fields.Next(room)
			if wv, ok := want.Header[name]; !ok || len(vs) != len(wv) || cap(vs) != len(vs) || (n > 0 && fields.Sorted && name <= prev) {
				t.Errorf("Scan(%x): field %q: %q; View has %q", enc, name, vs, wv)
			} else {
				for j := range vs {
					if vs[j] != wv[j] {
						t.Errorf("Scan(%x): field %q: %q; View has %q", enc, name, vs, wv)
					}
				}
			}
			prev, room = name, rest
		}
		if len(room) != 0 {
			t.Errorf("Scan(%x): %d values left over", enc, len(room))
		}
		if a := testing.AllocsPerRun(10, func() { _, _, _, _ = record.Scan(enc) }); a != 0 {
			t.Errorf("Scan(%x) allocates %v times", enc, a)
		}
	}
	good := unhex(t, golden[0].record)
	for i := range len(good) {
		_, verr := record.View(good[:i])
		if _, _, _, err := record.Scan(good[:i]); (err == nil) != (verr == nil) {
			t.Errorf("Scan of the first %d bytes: %v; View: %v", i, err, verr)
		}
	}
}

// Scan, View and Check accept no encoding that Decode refuses, and Scan
// and View accept every one it decodes, to the same record.
func FuzzScan(f *testing.F) {
	for _, g := range golden {
		f.Add(unhex(f, g.record))
	}
	f.Add([]byte{})
	f.Add([]byte("\x92\x03\x02\x01b\x00\x01a\x00"))
	f.Add([]byte("\x92\x03\x01\x81\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, derr := record.Decode(b)
		_, fields, body, serr := record.Scan(b)
		got, verr := record.View(b)
		_, cerr := record.Check(b)
		if derr != nil {
			if serr == nil || verr == nil || !errors.Is(cerr, keystore.ErrCorruptRecord) {
				t.Fatalf("%x: Decode: %v; Scan: %v, View: %v, Check: %v", b, derr, serr, verr, cerr)
			}
			return
		}
		if serr != nil || verr != nil || !reflect.DeepEqual(got, want) || (fields.Sorted && fields.Len != len(want.Header)) || !bytes.Equal(body, want.Body) {
			t.Fatalf("%x: Decode: %+v; View: %+v, %v; Scan: %d fields, body %x, %v", b, want, got, verr, fields.Len, body, serr)
		}
	})
}
