package record_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// golden are records with their encodings as redisstore wrote them to Redis
// (and, from the second byte, pgstore to its header column) before the
// encoding moved here. Data already stored must decode the same.
var golden = []struct {
	rec            record.Record
	record, header string
}{
	{
		record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "Link": {"</a>", "</b>"}, "Empty": {}}, Body: []byte(`{"id":1}`)},
		"9203030c436f6e74656e742d5479706501106170706c69636174696f6e2f6a736f6e05456d70747900044c696e6b02043c2f613e043c2f623e7b226964223a317d",
		"030c436f6e74656e742d5479706501106170706c69636174696f6e2f6a736f6e05456d70747900044c696e6b02043c2f613e043c2f623e",
	},
	{record.Record{StatusCode: 204}, "980300", "00"},
	{record.Record{StatusCode: 599, Header: http.Header{"X": {"\x00\xff"}}, Body: []byte{0x80, 0x80, 0x80}}, "ae09010158010200ff808080", "010158010200ff"},
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecordEncodingIsStable(t *testing.T) {
	for _, g := range golden {
		want := unhex(t, g.record)
		if got := record.Append(nil, g.rec); !bytes.Equal(got, want) {
			t.Errorf("Append(%+v) = %x, want %s", g.rec, got, g.record)
		}
		if n := record.Len(g.rec); n != len(want) {
			t.Errorf("Len(%+v) = %d, want %d", g.rec, n, len(want))
		}
		if got, err := record.Decode(want); err != nil || !reflect.DeepEqual(got, g.rec) {
			t.Errorf("Decode(%s) = %+v, %v; want %+v", g.record, got, err, g.rec)
		}
		wantH := unhex(t, g.header)
		if got := record.AppendHeader(nil, g.rec.Header); !bytes.Equal(got, wantH) {
			t.Errorf("AppendHeader(%q) = %x, want %s", g.rec.Header, got, g.header)
		}
		if n := record.HeaderLen(g.rec.Header); n != len(wantH) {
			t.Errorf("HeaderLen(%q) = %d, want %d", g.rec.Header, n, len(wantH))
		}
		wantDecoded := g.rec.Header
		if wantDecoded == nil {
			wantDecoded = http.Header{}
		}
		if got, err := record.DecodeHeader(wantH); err != nil || !reflect.DeepEqual(got, wantDecoded) {
			t.Errorf("DecodeHeader(%s) = %q, %v; want %q", g.header, got, err, wantDecoded)
		}
	}
}

// Earlier versions of redisstore wrote the header fields in map order.
func TestDecodeAcceptsUnsortedFields(t *testing.T) {
	enc := "\x92\x03" + "\x02" + "\x04Link\x01\x04</a>" + "\x01A\x00" + "body"
	want := record.Record{StatusCode: 201, Header: http.Header{"Link": {"</a>"}, "A": {}}, Body: []byte("body")}
	if got, err := record.Decode([]byte(enc)); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Decode(%q) = %+v, %v; want %+v", enc, got, err, want)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, rec := range []record.Record{
		{},
		{StatusCode: 204},
		{StatusCode: -1, Body: []byte{0}},
		{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":1}`)},
		{StatusCode: 200, Header: http.Header{"Link": {"</a>", "</b>"}, "Empty": {}, "X": {""}}, Body: []byte("\x00\xff\r\n")},
		{StatusCode: 1 << 40, Body: bytes.Repeat([]byte{0x80}, 1000)},
		{StatusCode: 200, Header: manyFields(40)},
	} {
		enc := record.Append(nil, rec)
		if len(enc) != record.Len(rec) {
			t.Errorf("encoding of %+v is %d bytes, Len says %d", rec, len(enc), record.Len(rec))
		}
		got, err := record.Decode(enc)
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Errorf("Decode(Append(%+v)) = %+v, %v", rec, got, err)
		}
	}
}

func manyFields(n int) http.Header {
	h := make(http.Header, n)
	for i := range n {
		h["X-"+strconv.Itoa(i)] = []string{strconv.Itoa(i)}
	}
	return h
}

// Equal records, in the sense of a repeated Complete, encode equally: the
// order in which a map yields its fields does not matter, nor does a nil
// header or body against an empty one.
func TestEqualRecordsEncodeEqually(t *testing.T) {
	want := record.Append(nil, record.Record{StatusCode: 200, Header: manyFields(40)})
	for range 20 {
		if got := record.Append(nil, record.Record{StatusCode: 200, Header: manyFields(40)}); !bytes.Equal(got, want) {
			t.Fatalf("two encodings of one record differ:\n%x\n%x", got, want)
		}
	}
	a := record.Append(nil, record.Record{StatusCode: 200})
	b := record.Append(nil, record.Record{StatusCode: 200, Header: http.Header{}, Body: []byte{}})
	if !bytes.Equal(a, b) {
		t.Errorf("nil header and body encode as %x, empty ones as %x", a, b)
	}
}

func TestDecodeSharesNoMemory(t *testing.T) {
	enc := record.Append(nil, golden[0].rec)
	rec, err := record.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.DecodeHeader(record.AppendHeader(nil, golden[0].rec.Header))
	if err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		enc[i] = 'Z'
	}
	if !reflect.DeepEqual(rec, golden[0].rec) {
		t.Errorf("overwriting the encoding changed the decoded record to %+v", rec)
	}
	if !reflect.DeepEqual(h, golden[0].rec.Header) {
		t.Errorf("overwriting the encoding changed the decoded header to %q", h)
	}
}

// A Redis reply is a string: what is decoded from one must not point into
// it either.
func TestDecodeFromStringSharesNoMemory(t *testing.T) {
	enc := string(record.Append(nil, golden[0].rec))
	lo := uintptr(unsafe.Pointer(unsafe.StringData(enc)))
	inside := func(p *byte) bool {
		a := uintptr(unsafe.Pointer(p))
		return a >= lo && a < lo+uintptr(len(enc))
	}
	rec, err := record.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if inside(unsafe.SliceData(rec.Body)) {
		t.Errorf("the body points into the encoding")
	}
	for name, values := range rec.Header {
		if inside(unsafe.StringData(name)) {
			t.Errorf("the name %q points into the encoding", name)
		}
		for _, v := range values {
			if inside(unsafe.StringData(v)) {
				t.Errorf("a value of %q points into the encoding", name)
			}
		}
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	rec := record.Record{StatusCode: 201, Header: manyFields(16), Body: []byte(`{"stored":["feature-1"]}`)}
	buf := make([]byte, 0, record.Len(rec))
	if n := testing.AllocsPerRun(100, func() { buf = record.Append(buf[:0], rec) }); n != 0 {
		t.Errorf("Append into a buffer of Len bytes: %v allocations, want 0", n)
	}
}

func TestDecodeCorrupt(t *testing.T) {
	full := record.Append(nil, record.Record{StatusCode: 201, Header: http.Header{"A": {"b", "c"}}})
	// Every strict prefix of an encoding with no body ends inside a field.
	for n := range len(full) {
		if _, err := record.Decode(full[:n]); !errors.Is(err, keystore.ErrCorruptRecord) {
			t.Errorf("Decode of the first %d of %d bytes: err = %v, want ErrCorruptRecord", n, len(full), err)
		}
	}
	for _, b := range []string{
		"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", // status varint too long
		"\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", // uvarint too long
		"\x02\x7f",                 // 127 fields in no bytes
		"\x02\x01\x05ab",           // name longer than the input
		"\x02\x01\x01a\x7f\x01b",   // 127 values
		"\x02\x01\x01a\x01\x09xyz", // value longer than the input
	} {
		if _, err := record.Decode([]byte(b)); !errors.Is(err, keystore.ErrCorruptRecord) {
			t.Errorf("Decode(%q): err = %v, want ErrCorruptRecord", b, err)
		}
	}

	good := record.AppendHeader(nil, http.Header{"Content-Type": {"application/json"}})
	for n := range len(good) {
		if _, err := record.DecodeHeader(good[:n]); !errors.Is(err, keystore.ErrCorruptRecord) {
			t.Errorf("DecodeHeader of the first %d of %d bytes: err = %v, want ErrCorruptRecord", n, len(good), err)
		}
	}
	for _, b := range [][]byte{
		append(good, 0),                    // trailing bytes
		{0xff, 0xff, 0xff, 0xff, 0x0f},     // 2³² fields
		{0x01, 0x01, 'a', 0x01, 0x05, 'b'}, // value longer than the input
	} {
		if _, err := record.DecodeHeader(b); !errors.Is(err, keystore.ErrCorruptRecord) {
			t.Errorf("DecodeHeader(%q): err = %v, want ErrCorruptRecord", b, err)
		}
	}
}

func TestCheckRecord(t *testing.T) {
	for _, g := range golden {
		enc := unhex(t, g.record)
		if status, err := record.Check(enc); status != g.rec.StatusCode || err != nil {
			t.Errorf("Check(%s) = %d, %v; want %d, nil", g.record, status, err, g.rec.StatusCode)
		}
		if n := testing.AllocsPerRun(10, func() { _, _ = record.Check(enc) }); n != 0 {
			t.Errorf("Check(%s): %v allocations, want 0", g.record, n)
		}
	}
	full := record.Append(nil, record.Record{StatusCode: 201, Header: http.Header{"A": {"b", "c"}}})
	for n := range len(full) {
		if _, err := record.Check(full[:n]); !errors.Is(err, keystore.ErrCorruptRecord) {
			t.Errorf("Check of the first %d of %d bytes: err = %v, want ErrCorruptRecord", n, len(full), err)
		}
	}
	for _, b := range []string{
		"\x92\x03\x02\x01b\x00\x01a\x00", // fields out of order (Decode accepts them)
		"\x92\x03\x02\x01a\x00\x01a\x00", // one name twice
		"\x02\x01\x05ab",                 // name longer than the input
		"\x02\x01\x01a\x01\x09xyz",       // value longer than the input
		"\x92\x83\x00\x00",               // status in three bytes, not two
		"\x92\x03\x80\x00",               // no fields, counted in two bytes
		"\x92\x03\x01\x81\x00a\x00",      // a name's length in two bytes
	} {
		if _, err := record.Check([]byte(b)); !errors.Is(err, keystore.ErrCorruptRecord) {
			t.Errorf("Check(%q): err = %v, want ErrCorruptRecord", b, err)
		}
	}
	for _, status := range []int{199, 600, -1} {
		enc := record.Append(nil, record.Record{StatusCode: status})
		if got, err := record.Check(enc); got != status || !errors.Is(err, keystore.ErrInvalidStatus) {
			t.Errorf("Check of status %d = %d, %v; want ErrInvalidStatus", status, got, err)
		}
	}
}

// FuzzRecord checks that every record survives the round trip, and that
// Len and HeaderLen are exact.
func FuzzRecord(f *testing.F) {
	f.Add(201, "Content-Type", "application/json", "Link", []byte(`{"id":1}`))
	f.Add(-1, "", "", "", []byte{})
	f.Add(1<<40, "\xff", "\x00", "\xff", []byte{0x80})
	f.Fuzz(func(t *testing.T, status int, name, value, other string, body []byte) {
		rec := record.Record{StatusCode: status, Body: body}
		if name != "" {
			rec.Header = http.Header{name: {value, other}, other: {}}
		}
		enc := record.Append([]byte("prefix"), rec)
		if !bytes.Equal(enc[:6], []byte("prefix")) {
			t.Fatalf("Append overwrote dst: %q", enc)
		}
		enc = enc[6:]
		if len(enc) != record.Len(rec) || record.HeaderLen(rec.Header) != len(record.AppendHeader(nil, rec.Header)) {
			t.Fatalf("%+v: Len %d, HeaderLen %d, encoding %x", rec, record.Len(rec), record.HeaderLen(rec.Header), enc)
		}
		status, cerr := record.Check(enc)
		if rec.Validate() == nil && (cerr != nil || status != rec.StatusCode) || rec.Validate() != nil && !errors.Is(cerr, keystore.ErrInvalidStatus) {
			t.Fatalf("Check(Append(%+v)) = %d, %v", rec, status, cerr)
		}
		got, err := record.Decode(enc)
		if len(rec.Body) == 0 {
			rec.Body = nil
		}
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Fatalf("Decode(Append(%+v)) = %+v, %v", rec, got, err)
		}
	})
}

// FuzzDecodeRecord checks that arbitrary bytes never make the decoders
// panic, and that whatever decodes encodes to something that decodes the
// same.
func FuzzDecodeRecord(f *testing.F) {
	for _, g := range golden {
		enc, _ := hex.DecodeString(g.record)
		f.Add(enc)
	}
	f.Add([]byte{})
	f.Add([]byte("\x02\x02\x01b\x00\x01a\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := record.DecodeHeader(b); err == nil {
			again, err := record.DecodeHeader(record.AppendHeader(nil, h))
			if err != nil || !reflect.DeepEqual(again, h) {
				t.Fatalf("%x decoded to header %q, which round-trips to %q, %v", b, h, again, err)
			}
		}
		rec, err := record.Decode(b)
		if err != nil {
			if !errors.Is(err, keystore.ErrCorruptRecord) {
				t.Fatalf("Decode(%x): error %v does not wrap ErrCorruptRecord", b, err)
			}
			return
		}
		enc := record.Append(nil, rec)
		if _, cerr := record.Check(b); errors.Is(cerr, keystore.ErrCorruptRecord) == bytes.Equal(enc, b) {
			t.Fatalf("Check(%x) = %v, but Append of what it decodes to is %x", b, cerr, enc)
		}
		again, err := record.Decode(enc)
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("%x decoded to %+v, which round-trips to %+v, %v", b, rec, again, err)
		}
		if len(enc) > len(b) {
			t.Fatalf("%x decoded to %+v, whose encoding %x is longer", b, rec, enc)
		}
	})
}

// View reads what Decode reads, from the encoding's own memory, and
// refuses what Decode refuses.
func TestViewMatchesDecode(t *testing.T) {
	for _, g := range golden {
		enc := unhex(t, g.record)
		want, err := record.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := record.View(enc)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("View(%s) = %+v, %v; want %+v", g.record, got, err, want)
		}
		if len(got.Body) > 0 && unsafe.SliceData(got.Body) != unsafe.SliceData(enc[len(enc)-len(got.Body):]) {
			t.Errorf("View(%s) copied the body", g.record)
		}
	}
	good := unhex(t, golden[0].record)
	for i := range len(good) {
		bad := good[:i]
		_, derr := record.Decode(bad)
		if _, err := record.View(bad); (err == nil) != (derr == nil) || (err != nil && !errors.Is(err, keystore.ErrCorruptRecord)) {
			t.Errorf("View of the first %d bytes: %v; Decode: %v", i, err, derr)
		}
	}
}
