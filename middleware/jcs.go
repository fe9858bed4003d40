package middleware

// The JSON Canonicalization Scheme of RFC 8785, for Config.CanonicalJSON:
// a byte-exact serialisation of a JSON value, so that two documents that
// differ only in member order, whitespace, string escapes or number
// spelling canonicalise to the same bytes, and fingerprint alike.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// errNotIJSON reports input that is not one I-JSON (RFC 7493) value: malformed
// JSON, invalid UTF-8, a lone surrogate escape (\ud800 without its pair),
// duplicate member names, a number that IEEE 754 double precision does not
// represent exactly (9007199254740993, 1e-400, 0.30000000000000001: its
// value is not that of the shortest decimal that round-trips its float64),
// or data after the value.
//
// Refusing these keeps canonicalize injective: two documents with different
// values never share a canonical form, which a decoder's U+FFFD or a
// float64's rounding would otherwise give them.
var errNotIJSON = errors.New("middleware: not a canonicalizable I-JSON value")

// jcsMaxDepth bounds the nesting of arrays and objects that canonicalize accepts.
const jcsMaxDepth = 512

// canonicalize returns the RFC 8785 canonical form of the JSON value in data.
func canonicalize(data []byte) ([]byte, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: invalid UTF-8", errNotIJSON)
	}
	if err := jcsCheckSurrogates(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(data))
	if err := jcsValue(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the top-level value", errNotIJSON)
	}
	return out.Bytes(), nil
}

func jcsValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errNotIJSON, err)
	}
	return jcsEmit(dec, tok, out, depth)
}

func jcsEmit(dec *json.Decoder, tok json.Token, out *bytes.Buffer, depth int) error {
	switch v := tok.(type) {
	case json.Delim:
		if depth >= jcsMaxDepth {
			return fmt.Errorf("%w: nested deeper than %d", errNotIJSON, jcsMaxDepth)
		}
		if v == '[' {
			return jcsArray(dec, out, depth+1)
		}
		return jcsObject(dec, out, depth+1)
	case string:
		jcsWriteString(out, v)
	case json.Number:
		s, err := jcsFormatNumber(string(v))
		if err != nil {
			return err
		}
		out.WriteString(s)
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func jcsArray(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	out.WriteByte('[')
	for i := 0; ; i++ {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", errNotIJSON, err)
		}
		if tok == json.Delim(']') {
			out.WriteByte(']')
			return nil
		}
		if i > 0 {
			out.WriteByte(',')
		}
		if err := jcsEmit(dec, tok, out, depth); err != nil {
			return err
		}
	}
}

type jcsMember struct {
	name  string
	key   []uint16 // the name in UTF-16 code units: RFC 8785 sorts by these
	value []byte
}

func jcsObject(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	var members []jcsMember
	seen := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", errNotIJSON, err)
		}
		if tok == json.Delim('}') {
			break
		}
		name := tok.(string) // the decoder only yields strings here
		if seen[name] {
			return fmt.Errorf("%w: duplicate member name %q", errNotIJSON, name)
		}
		seen[name] = true
		var v bytes.Buffer
		if err := jcsValue(dec, &v, depth); err != nil {
			return err
		}
		members = append(members, jcsMember{name: name, key: utf16.Encode([]rune(name)), value: v.Bytes()})
	}
	slices.SortFunc(members, func(a, b jcsMember) int { return slices.Compare(a.key, b.key) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		jcsWriteString(out, m.name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

// jcsWriteString writes s as RFC 8785 requires: the two-character escapes for
// the characters that have them, \u00xx for other control characters, and
// everything else as literal UTF-8.
func jcsWriteString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(out, `\u%04x`, r)
			} else {
				out.WriteRune(r)
			}
		}
	}
	out.WriteByte('"')
}

// jcsFormatNumber serialises a JSON number the way ECMAScript's
// Number.prototype.toString does (RFC 8785 section 3.2.2.3).
func jcsFormatNumber(lit string) (string, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("%w: number %s outside IEEE 754 double precision", errNotIJSON, lit)
	}
	ld, le, lok := jcsDecimal(lit)
	fd, fe, _ := jcsDecimal(strconv.FormatFloat(math.Abs(f), 'e', -1, 64))
	if !lok || ld != fd || (ld != "" && le != fe) {
		return "", fmt.Errorf("%w: number %s not exactly representable in IEEE 754 double precision", errNotIJSON, lit)
	}
	return jcsFormatFloat(f), nil
}

// jcsDecimal returns the value of the JSON number lit, without its sign, as
// significant digits (no leading or trailing zeros; empty for zero) times
// ten to exp. ok is false when the exponent does not fit an int.
func jcsDecimal(lit string) (digits string, exp int, ok bool) {
	lit = strings.TrimPrefix(lit, "-")
	mant, e, hasExp := lit, "", false
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, e, hasExp = lit[:i], lit[i+1:], true
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits = strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "", 0, true
	}
	trimmed := strings.TrimRight(digits, "0")
	exp = len(digits) - len(trimmed) - len(frac)
	if hasExp {
		x, err := strconv.Atoi(strings.TrimPrefix(e, "+"))
		if err != nil || x > math.MaxInt32 || x < math.MinInt32 {
			return "", 0, false
		}
		exp += x
	}
	return trimmed, exp, true
}

// jcsCheckSurrogates reports a \u escape of a UTF-16 surrogate, inside a
// string of data, that is not the first half of a high-low pair: such a
// string has no Unicode value (a decoder would substitute U+FFFD).
// Malformed JSON is left to the decoder.
func jcsCheckSurrogates(data []byte) error {
	in := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\' && i+1 < len(data) && data[i+1] == 'u':
			r, ok := hex4(data, i+2)
			if !ok {
				return nil // malformed: the decoder says so
			}
			switch {
			case r >= 0xd800 && r < 0xdc00:
				if lo, ok := hex4(data, i+8); ok && data[i+6] == '\\' && data[i+7] == 'u' && lo >= 0xdc00 && lo < 0xe000 {
					i += 11
					continue
				}
				return fmt.Errorf("%w: lone surrogate \\u%04x at offset %d", errNotIJSON, r, i)
			case r >= 0xdc00 && r < 0xe000:
				return fmt.Errorf("%w: lone surrogate \\u%04x at offset %d", errNotIJSON, r, i)
			}
			i += 5
		case c == '\\':
			i++ // the escaped character
		}
	}
	return nil
}

// hex4 decodes the four hexadecimal digits at data[i:i+4].
func hex4(data []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(data[i:i+4]), 16, 16)
	return rune(v), err == nil
}

// FormatFloat formats a finite f as ECMAScript's Number.prototype.toString.
func jcsFormatFloat(f float64) string {
	if f == 0 {
		return "0" // and -0 too
	}
	var sign string
	if f < 0 {
		sign, f = "-", -f
	}
	// The shortest decimal digits that round-trip, and their exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1 // n: position of the decimal point
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		if n-1 >= 0 {
			s += "e+" + strconv.Itoa(n-1)
		} else {
			s += "e-" + strconv.Itoa(1-n)
		}
	}
	return sign + s
}
