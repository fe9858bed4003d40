package middleware

import (
	"errors"
	"math"
	"testing"
)

func TestFormatFloat(t *testing.T) {
	// From RFC 8785 appendix B and ECMAScript's Number.prototype.toString.
	cases := map[float64]string{
		0:                      "0",
		math.Copysign(0, -1):   "0",
		1:                      "1",
		-1:                     "-1",
		0.1:                    "0.1",
		1e21:                   "1e+21",
		1e20:                   "100000000000000000000",
		123e18:                 "123000000000000000000",
		1e-6:                   "0.000001",
		1e-7:                   "1e-7",
		1.5e-7:                 "1.5e-7",
		333333333.33333329:     "333333333.3333333",
		1e23:                   "1e+23",
		9007199254740992:       "9007199254740992",
		295147905179352830000:  "295147905179352830000",
		4.50:                   "4.5",
		2e-3:                   "0.002",
		5e-324:                 "5e-324",
		1.7976931348623157e308: "1.7976931348623157e+308",
		-1.2345e-10:            "-1.2345e-10",
	}
	for f, want := range cases {
		if got := jcsFormatFloat(f); got != want {
			t.Errorf("jcsFormatFloat(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestCanonicalize(t *testing.T) {
	cases := []struct{ in, want string }{
		// RFC 8785 section 3.2.3's sorting example, abridged.
		{`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{` { "b" : [ 1.0 , 2E1, -0 ] , "a" : { "z": true, "y": null } } `, `{"a":{"y":null,"z":true},"b":[1,20,0]}`},
		{`"\u0041\u001f\/"`, `"A\u001f/"`},
		{`[]`, `[]`},
		{`{}`, `{}`},
	}
	for _, c := range cases {
		got, err := canonicalize([]byte(c.in))
		if err != nil {
			t.Errorf("canonicalize(%s): %v", c.in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("canonicalize(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"a":2}`, // duplicate names
		`{"a":1`,        // truncated
		`[1] [2]`,       // two values
		`1e400`,         // not a double
		"\"\xff\"",      // invalid UTF-8
		``,
	} {
		if _, err := canonicalize([]byte(in)); !errors.Is(err, errNotIJSON) {
			t.Errorf("canonicalize(%q): err = %v, want errNotIJSON", in, err)
		}
	}
	deep := make([]byte, 0, 2*jcsMaxDepth+2)
	for range jcsMaxDepth + 1 {
		deep = append(deep, '[')
	}
	for range jcsMaxDepth + 1 {
		deep = append(deep, ']')
	}
	if _, err := canonicalize(deep); !errors.Is(err, errNotIJSON) {
		t.Errorf("canonicalize of %d nested arrays: err = %v, want errNotIJSON", jcsMaxDepth+1, err)
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.5e300,"x"]}`, `[null,true,false,-0.0]`, `"\u00e9"`,
		`{"to":9007199254740993}`, `{"a":"\ud800"}`, `"\ud83d\ude00"`, `"\\ud800"`, `[1e21,0.1,5e-324,1E-7]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := canonicalize(data)
		if err != nil {
			return
		}
		// The canonical form is a fixed point.
		again, err := canonicalize(c)
		if err != nil {
			t.Fatalf("canonical form %q does not canonicalize: %v", c, err)
		}
		if string(again) != string(c) {
			t.Fatalf("not idempotent: %q -> %q", c, again)
		}
	})
}

// Two different payloads must never share a canonical form: a number that
// does not survive float64 exactly, and a lone surrogate (which a decoder
// would replace with U+FFFD), make a document not I-JSON.
func TestNotIJSONIsRefused(t *testing.T) {
	for _, in := range []string{
		`{"to":9007199254740993}`,
		`{"a":"\ud800"}`,
		`{"a":"\udc00"}`,
		`{"a":"x\ud800\u0041"}`,
		`{"\ud800":1}`,
		`[0.30000000000000001]`,
		`[1e-400]`,
		`[123456789012345678901234567890]`,
	} {
		if got, err := canonicalize([]byte(in)); !errors.Is(err, errNotIJSON) {
			t.Errorf("canonicalize(%s) = %s, %v; want errNotIJSON", in, got, err)
		}
	}
	// Their neighbours are I-JSON and keep their canonical forms.
	for in, want := range map[string]string{
		`{"to":9007199254740992}`:        `{"to":9007199254740992}`,
		`{"a":"\ufffd"}`:                 "{\"a\":\"\ufffd\"}",
		`{"a":"\ud83d\ude00"}`:           "{\"a\":\"\U0001F600\"}",
		`{"a":"\\ud800"}`:                `{"a":"\\ud800"}`,
		`[0.3, 1.50, 1E2, 2e-7]`:         `[0.3,1.5,100,2e-7]`,
		`[-0.0, 100e-2, 0.1e1]`:          `[0,1,1]`,
		`[1e21, 1.7976931348623157e308]`: `[1e+21,1.7976931348623157e+308]`,
	} {
		got, err := canonicalize([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("canonicalize(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
