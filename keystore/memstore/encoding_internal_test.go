package memstore

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

// TestDecodeRecordAgrees holds memstore's own decoder to
// keystore.DecodeRecord, and checks that what it returns shares nothing
// with the stored bytes.
func TestDecodeRecordAgrees(t *testing.T) {
	for _, rec := range []keystore.Record{
		{StatusCode: 204},
		{StatusCode: 201, Body: []byte(`{"stored":["f1"]}`)},
		{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}},
		{StatusCode: 422, Header: http.Header{"Content-Type": {"application/problem+json"}, "Cache-Control": {"no-store"}, "Link": {"<a>", "", "<b>"}, "X-Empty": {}}, Body: []byte("x")},
		{StatusCode: 599, Header: http.Header{"Trailer:Digest": {"sha-256=:AAAA:"}, "Etag": {`"1"`}}, Body: make([]byte, 300)},
	} {
		data := encodeRecord(rec)
		want, err := keystore.DecodeRecord(data)
		if err != nil {
			t.Fatal(err)
		}
		got := decodeRecord(data)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeRecord = %#v, keystore.DecodeRecord = %#v", got, want)
		}
		// The header's strings share the body's allocation: no write to
		// the body, nor an append, may change them.
		again := decodeRecord(data)
		for i := range again.Body {
			again.Body[i] = '!'
		}
		_ = append(again.Body, "appended"...)
		if !reflect.DeepEqual(again.Header, want.Header) || cap(again.Body) != len(again.Body) {
			t.Errorf("after changing the body, the header is %#v, want %#v (body capacity %d, length %d)", again.Header, want.Header, cap(again.Body), len(again.Body))
		}
		for _, vs := range got.Header {
			for i := range vs {
				vs[i] = "changed"
			}
			_ = append(vs, "appended")
		}
		for i := range got.Body {
			got.Body[i] = '!'
		}
		if again := decodeRecord(data); !reflect.DeepEqual(again, want) {
			t.Errorf("after changing a decoded record, decodeRecord = %#v, want %#v", again, want)
		}
	}
}
