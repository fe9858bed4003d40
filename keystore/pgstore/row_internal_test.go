package pgstore

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
)

// encodedRecord, which reads a completed row's record from its columns'
// bytes, writes what decoding the columns and encoding them again writes
// (the long way), for every header a record can have; for header bytes
// that are not a header encoding as record.AppendHeader writes it, it
// declines, and the long way decides.
func TestEncodedRecord(t *testing.T) {
	for _, h := range []http.Header{
		nil,
		{},
		{"Content-Type": {"application/json"}},
		{"Location": {"/features/f1"}, "Content-Type": {"application/geo+json"}, "X-Many": {"a", "b", ""}},
		{"X-Empty": {}},
	} {
		for _, body := range [][]byte{nil, []byte(`{"stored":["f1"]}`)} {
			for _, status := range []int32{201, 599} {
				want := record.Append(nil, record.Record{StatusCode: int(status), Header: h, Body: body})
				if got := encodedRecord(status, encodeHeader(nil, h), body); !bytes.Equal(got, want) {
					t.Errorf("status %d, header %v, body %q: %q, want %q", status, h, body, got, want)
				}
			}
		}
	}
	unsorted := record.AppendHeaderField(record.AppendHeaderField([]byte{2}, "B", []string{"1"}), "A", []string{"2"})
	if _, err := decodeHeader(unsorted); err != nil {
		t.Fatalf("the unsorted header does not decode: %v", err)
	}
	for name, header := range map[string][]byte{"unsorted": unsorted, "truncated": unsorted[:len(unsorted)-1]} {
		if got := encodedRecord(201, header, nil); got != nil {
			t.Errorf("%s header: %q, want nil (the long way)", name, got)
		}
	}
}
