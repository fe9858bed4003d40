package client

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"
)

// referenceLine is a journal line as encoding/json writes it: the format
// the journal's files have always had.
func referenceLine(t *testing.T, l journalLine) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLineFieldsAllWritten: appendLine writes journalLine's fields by
// hand, so a field added to the struct would be missing from every line it
// writes; the cases of TestMarshalLineBytes set each of the twelve below.
func TestLineFieldsAllWritten(t *testing.T) {
	var tags []string
	typ := reflect.TypeFor[journalLine]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			tags = append(tags, f.Tag.Get("json"))
		}
	}
	want := []string{"op", "method", "url", "key", "content_type,omitempty", "header,omitempty", "body,omitempty",
		"body_base64,omitempty", "empty,omitempty", "time", "outcome,omitempty", "ended,omitzero"}
	if !slices.Equal(tags, want) {
		t.Errorf("journalLine's fields are %q; appendLine writes %q: teach it the change", tags, want)
	}
}

// TestMarshalLineBytes: every line the journal writes is, byte for byte,
// the line encoding/json writes (HTML not escaped), whatever its strings,
// header, body and times hold.
func TestMarshalLineBytes(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	plus2 := time.Date(2026, 3, 1, 14, 0, 0, 0, time.FixedZone("", 2*3600))
	strs := []string{"", "POST", "https://r.test/f?a=1&b=<2>", `key "quoted" \ back`, "tab\tnew\nline\r\x00\x01\x1f\x7f",
		"é ü 世界", "\u2028\u2029", "bad \xff\xfe utf8", "<script>&amp;</script>"}
	var lines []journalLine
	for _, s := range strs {
		lines = append(lines,
			journalLine{Op: "done", Method: s, URL: s, Key: s, Time: t0, Outcome: s},
			journalLine{Op: "record", Method: "PUT", URL: "https://r.test/" + s, Key: s, ContentType: s,
				Header: http.Header{s: {s, "v"}, "X-A": {"1"}, "X-Nil": nil, "X-Empty": {}}, Empty: true, Time: plus2, Ended: t0},
		)
	}
	for _, body := range []string{`{"a":1}`, `{"type":"Feature","geometry":{"type":"Point","coordinates":[1.5,2.25]}}`, `[1,"x\u00e9"]`, `"s"`} {
		lines = append(lines, journalLine{Op: "record", Method: "POST", URL: "u", Key: "k", ContentType: "application/json",
			Body: json.RawMessage(body), Time: t0, Outcome: OutcomeDelivered, Ended: t0.Add(time.Second)})
	}
	for _, b := range [][]byte{{0, 0xff, '<'}, []byte("not json"), {1}} {
		lines = append(lines, journalLine{Op: "record", Method: "POST", URL: "u", Key: "k", BodyBase64: b, Time: time.Time{}})
	}
	lines = append(lines,
		journalLine{Op: "record", Header: http.Header{}, Time: t0},
		journalLine{Op: "record", Header: http.Header{"B": {"2"}, "A": {"1"}, "C": {"3"}}, Body: json.RawMessage(`{ "not": "compact" }`), Time: t0},
		journalLine{Op: "done", Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local), Ended: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
	)
	for i, l := range lines {
		got, err := marshalLine(l)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if want := referenceLine(t, l); !bytes.Equal(got, want) {
			t.Errorf("line %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// A time encoding/json refuses is refused alike.
	if _, err := marshalLine(journalLine{Op: "done", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("a year past 9999 was encoded; encoding/json refuses it")
	}
}

// TestJournalLineAllocs: a record's line, of a body that is compact JSON,
// and a done mark's line each cost one allocation, the line itself.
func TestJournalLineAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector (see raceEnabled)")
	}
	e := journalEntry(Delivery{URL: "http://127.0.0.1:4000/features", Key: "k123456",
		Body: []byte(`{"type":"Feature","id":"f","geometry":{"type":"Point","coordinates":[1.5,2.25]}}`)})
	e.Recorded = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	if n := testing.AllocsPerRun(100, func() { _, _ = recordLine(e) }); n > 1 {
		t.Errorf("recordLine: %v allocations, want 1", n)
	}
	done := journalLine{Op: "done", Method: e.Method, URL: e.URL, Key: e.Key, Time: e.Recorded, Outcome: OutcomeDelivered}
	if n := testing.AllocsPerRun(100, func() { _, _ = marshalLine(done) }); n > 1 {
		t.Errorf("done line: %v allocations, want 1", n)
	}
}

// TestEmbeddable: a body is embedded as it is exactly when encoding/json
// would write it back unchanged.
func TestEmbeddable(t *testing.T) {
	for _, p := range []string{`{"a":1}`, `{ "a":1}`, `{"a b":"c d"}`, `{"a\"b c":1}`, `{"a\\":" x"}`, `{"a\\" :1}`,
		`["x\\\\" ,1]`, "[1,\n2]", "\"\t\"", `"\u2028"`, "\"\u2028\"", "[\"\u2029\"]", "[\"\u2027\"]", `{"<":1}`, `{"a":"x&y"}`, `["&"]`, `{"a":">"}`,
		`1 `, ` 1`, `nul`, `"unterminated`, `{"a":"é"}`} {
		var c bytes.Buffer
		want := json.Valid([]byte(p)) && !bytes.ContainsAny([]byte(p), "<>&\u2028\u2029") &&
			json.Compact(&c, []byte(p)) == nil && c.String() == p
		if got := embeddable([]byte(p)); got != want {
			t.Errorf("embeddable(%q) = %v, want %v", p, got, want)
		}
	}
}
