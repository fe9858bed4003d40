package record_test

import (
	"testing"

	"github.com/geoidem/geoidem/internal/record"
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
		if fields.Len != len(want.Header) || fields.Sorted != (i > 0) {
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
