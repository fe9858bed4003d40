package redisstore

import (
	"bytes"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, rec := range []keystore.Record{
		{},
		{StatusCode: 204},
		{StatusCode: -1, Body: []byte{0}},
		{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":1}`)},
		{StatusCode: 200, Header: http.Header{"Link": {"</a>", "</b>"}, "Empty": {}, "X": {""}}, Body: []byte("\x00\xff\r\n")},
		{StatusCode: 1 << 40, Body: bytes.Repeat([]byte{0x80}, 1000)},
	} {
		enc := appendRecord(nil, rec)
		if len(enc) > recordSize(rec) {
			t.Errorf("encoding of %+v is %d bytes, above recordSize %d", rec, len(enc), recordSize(rec))
		}
		got, err := decodeRecord(string(enc))
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", rec, err)
		}
		if got.StatusCode != rec.StatusCode || !bytes.Equal(got.Body, rec.Body) || len(got.Header) != len(rec.Header) {
			t.Errorf("round trip of %+v gave %+v", rec, got)
		}
		for k, v := range rec.Header {
			if g := got.Header[k]; len(g) != len(v) || (len(v) > 0 && !reflect.DeepEqual(g, v)) {
				t.Errorf("header %q: got %q, want %q", k, g, v)
			}
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	full := appendRecord(nil, keystore.Record{StatusCode: 201, Header: http.Header{"A": {"b", "c"}}})
	// Every strict prefix of an encoding with no body ends inside a field.
	for n := range len(full) {
		if _, err := decodeRecord(string(full[:n])); !errors.Is(err, errCorrupt) {
			t.Errorf("decode of the first %d of %d bytes: err = %v, want errCorrupt", n, len(full), err)
		}
	}
	for _, b := range []string{
		"\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", // uvarint too long
		"\x02\x7f",                 // 127 fields in no bytes
		"\x02\x01\x05ab",           // name longer than the input
		"\x02\x01\x01a\x7f\x01b",   // 127 values
		"\x02\x01\x01a\x01\x09xyz", // value longer than the input
	} {
		if _, err := decodeRecord(b); !errors.Is(err, errCorrupt) {
			t.Errorf("decode(%q): err = %v, want errCorrupt", b, err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(string(appendRecord(nil, keystore.Record{StatusCode: 201, Header: http.Header{"A": {"b"}}, Body: []byte("x")})))
	f.Add("")
	f.Fuzz(func(t *testing.T, b string) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		again, err := decodeRecord(string(appendRecord(nil, rec)))
		if err != nil || again.StatusCode != rec.StatusCode || !bytes.Equal(again.Body, rec.Body) || len(again.Header) != len(rec.Header) {
			t.Fatalf("re-encoding %+v gave %+v, %v", rec, again, err)
		}
	})
}

// Completed entries written before the completing token was stored ('c' |
// fingerprint | record) are still replayed.
func TestParseLegacyCompletedEntry(t *testing.T) {
	fp := keystore.Fingerprint{7}
	rec := keystore.Record{StatusCode: 201, Header: http.Header{"A": {"b"}}, Body: []byte("legacy")}
	for _, v := range []string{
		"c" + string(fp[:]) + string(appendRecord(nil, rec)),
		"d" + string(fp[:]) + "\x00\x00\x00\x00\x00\x00\x00\x09" + string(appendRecord(nil, rec)),
	} {
		c, ok := parseClaim(v)
		if !ok || c.State != keystore.Completed || c.Fingerprint != fp || c.Record.StatusCode != 201 || string(c.Record.Body) != "legacy" {
			t.Errorf("parseClaim(%.1q…) = %+v, %v; want the completed record", v, c, ok)
		}
	}
}
