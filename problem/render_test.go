package problem

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	cases := []struct {
		name string
		doc  doc
		ext  []member
		want string
	}{
		{"all members", doc{TypeBase + "x", "Title", 422, "a <b> & c"}, nil,
			`{"type":"` + TypeBase + `x","title":"Title","status":422,"detail":"a <b> & c"}`},
		{"no detail", doc{Type: "t", Title: "T", Status: 400}, nil, `{"type":"t","title":"T","status":400}`},
		{"extensions in order", doc{"t", "T", 422, "d"}, []member{{"errors", []byte(`[1]`)}, {"truncated", []byte(`true`)}},
			`{"type":"t","title":"T","status":422,"detail":"d","errors":[1],"truncated":true}`},
		{"escapes member names that need it", doc{"t", "T", 400, ""}, []member{{"a\"b\n", []byte(`1`)}},
			`{"type":"t","title":"T","status":400,"a\"b\n":1}`},
		{"escapes quotes and controls, keeps invalid UTF-8 out", doc{"t", "T", 400, "\"\n\xff"}, nil,
			`{"type":"t","title":"T","status":400,"detail":"\"\n\ufffd"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(render(c.doc, c.ext...))
			if got != c.want {
				t.Errorf("render = %s\nwant   %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func TestWriteBody(t *testing.T) {
	for _, c := range []struct {
		retryAfter time.Duration
		want       string
	}{{0, ""}, {time.Millisecond, "1"}, {time.Second, "1"}, {1500 * time.Millisecond, "2"}, {1<<63 - 1, "9223372037"}} {
		w := httptest.NewRecorder()
		w.Header().Set("Content-Length", "99")
		w.Header().Set("WWW-Authenticate", "Webhook-Signature")
		writeBody(w, 503, []byte(`{}`), c.retryAfter)
		h := w.Header()
		if w.Code != 503 || h.Get("Content-Type") != MediaType || h.Get("Cache-Control") != "no-store" ||
			h.Get("Content-Length") != "" || h.Get("WWW-Authenticate") == "" || w.Body.String() != `{}` {
			t.Errorf("retryAfter %v: %d %v %q", c.retryAfter, w.Code, h, w.Body)
		}
		if got := h.Get("Retry-After"); got != c.want {
			t.Errorf("retryAfter %v: Retry-After %q, want %q", c.retryAfter, got, c.want)
		}
	}
	if !strings.HasSuffix(TypeBase, "#") {
		t.Errorf("TypeBase %q must end in a fragment mark", TypeBase)
	}
}

func BenchmarkRender(b *testing.B) {
	d := doc{TypeBase + "invalid-geojson", "Invalid GeoJSON", 422, "1 problem in the document"}
	ext := []member{{"errors", []byte(`[{"pointer":"/type","rule":"type","message":"unknown"}]`)}, {"truncated", []byte(`true`)}}
	b.ReportAllocs()
	for b.Loop() {
		_ = render(d, ext...)
	}
}

// FuzzAppendString: appendString's fast path for plain strings writes
// exactly what encoding/json writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "ctl\x01", "<&>", "é", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var fast, slow bytes.Buffer
		appendString(&fast, s)
		appendJSON(&slow, s)
		if fast.String() != slow.String() {
			t.Fatalf("appendString(%q) = %s, encoding/json gives %s", s, fast.Bytes(), slow.Bytes())
		}
	})
}
