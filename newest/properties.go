package newest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrDuplicateMember reports properties that hold the time's member more
// than once, which makes the time ambiguous: encoding/json would take the
// last, another parser the first. I-JSON (RFC 7493) forbids it, and package
// geojson refuses such a document (RuleDuplicateMember), so a validated
// feature never has it.
var ErrDuplicateMember = errors.New("the member appears more than once")

// ErrInvalidProperties reports a Feature's "properties" that are not a
// JSON object or null. Package geojson refuses such a document, so a
// validated feature never has them.
var ErrInvalidProperties = errors.New("properties are not a JSON object or null")

// FromProperties returns the observation time in a Feature's
// "properties": props is their JSON text, member the name of the property
// that holds the time, compared with each top-level member name decoded
// (escapes resolved, so "observation\u005ftime" is "observation_time";
// exact case, never encoding/json's case-insensitive match; invalid UTF-8
// and unpaired surrogates read as U+FFFD, as encoding/json reads them).
// Members of nested objects are not the property, whatever their name.
//
// With package geojson, props is a
// [github.com/geoidem/geoidem/geojson.RawFeature]'s Properties,
// exactly as received:
//
//	doc, err := geojson.DecodeDocument(body, opts) // or the middleware's Document
//	…
//	for i, f := range doc.Features {
//		t, ok, err := newest.FromProperties(f.Properties, "observation_time")
//		if err == nil && ok {
//			err = policy.Check(t)
//		}
//		if err != nil { // a 422 naming /features/<i>/properties/observation_time
//		…
//
// It returns:
//   - ok false and no error when props is nil or empty (a bare geometry's
//     RawFeature), null, or an object without the member: the feature has
//     no time ([Observation] with a zero Time);
//   - the time and ok true when the member's value is a string holding an
//     RFC 3339 date-time (see [Parse]);
//   - ok true and a [*TimeError] when the member is there but its value is
//     anything else, null included ([ErrInvalidTime]), or when it is there
//     more than once ([ErrDuplicateMember], whatever the values): never a
//     silent default, never a guess;
//   - ok false and an error wrapping [ErrInvalidProperties] when props is
//     not JSON, or is JSON but not an object or null.
//
// Other members may repeat: that is not this function's business. The
// cost is bounded by len(props): two passes (the syntax check of
// encoding/json's Valid, then a scan that skips every value but the
// member's) without recursion, maps or copies; only the member's value
// is decoded, so a call without the member allocates nothing.
func FromProperties(props []byte, member string) (time.Time, bool, error) {
	if len(props) == 0 {
		return time.Time{}, false, nil
	}
	if !json.Valid(props) {
		return time.Time{}, false, fmt.Errorf("%w: not JSON", ErrInvalidProperties)
	}
	i := skipSpace(props, 0)
	switch props[i] {
	case 'n':
		return time.Time{}, false, nil
	case '{':
	default:
		return time.Time{}, false, fmt.Errorf("%w: %s", ErrInvalidProperties, kind(props[i]))
	}
	var value []byte // the member's value; nil: not seen
	i = skipSpace(props, i+1)
	for props[i] != '}' {
		// props is valid JSON: a name, a colon, a value, then a comma or
		// the closing brace.
		end := skipValue(props, i)
		name := props[i+1 : end-1]
		i = skipSpace(props, skipSpace(props, end)+1)
		end = skipValue(props, i)
		if nameIs(name, member) {
			if value != nil {
				return time.Time{}, true, &TimeError{Err: ErrDuplicateMember, Value: truncate(strconv.Quote(member))}
			}
			value = props[i:end]
		}
		if i = skipSpace(props, end); props[i] == ',' {
			i = skipSpace(props, i+1)
		}
	}
	if value == nil {
		return time.Time{}, false, nil
	}
	t, err := parseJSON(value)
	return t, true, err
}

// skipSpace returns the index of the first byte of b at or after i that is
// not JSON white space (len(b) if none).
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at b[i],
// b being valid JSON. Nested values are skipped by counting brackets, not
// by recursion.
func skipValue(b []byte, i int) int {
	depth := 0
	for {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++ // the escaped byte: a quote or backslash does not end the string
				}
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		default: // a number, true, false or null
			for i < len(b) && !isDelimiter(b[i]) {
				i++
			}
		}
		if depth == 0 {
			return i
		}
		i = skipSpace(b, i)
		if b[i] == ',' || b[i] == ':' {
			i = skipSpace(b, i+1)
		}
	}
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// nameIs reports whether raw, the content of a JSON string between its
// quotes (valid JSON), decodes to name, decoding as encoding/json does:
// escapes resolved, invalid UTF-8 and unpaired surrogates as U+FFFD. It
// compares rune by rune, without decoding into a copy.
func nameIs(raw []byte, name string) bool {
	var enc [utf8.UTFMax]byte
	for len(raw) > 0 {
		var r rune
		switch c := raw[0]; {
		case c == '\\' && raw[1] == 'u':
			r, raw = hex4(raw[2:6]), raw[6:]
			if utf16.IsSurrogate(r) {
				// A pair when an escaped low surrogate follows; else U+FFFD,
				// and what follows is read on its own.
				low := rune(-1)
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					low = hex4(raw[2:6])
				}
				if r = utf16.DecodeRune(r, low); r != utf8.RuneError {
					raw = raw[6:]
				}
			}
		case c == '\\':
			r, raw = unescape(raw[1]), raw[2:]
		case c < utf8.RuneSelf:
			r, raw = rune(c), raw[1:]
		default:
			var size int
			r, size = utf8.DecodeRune(raw)
			raw = raw[size:]
		}
		n := utf8.EncodeRune(enc[:], r)
		if len(name) < n || name[:n] != string(enc[:n]) {
			return false
		}
		name = name[n:]
	}
	return name == ""
}

// hex4 decodes four hex digits, valid JSON.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unescape decodes the character after a backslash, other than u.
func unescape(c byte) rune {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return rune(c) // '"', '\\' or '/'
}

// kind names the JSON value that starts with c.
func kind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
