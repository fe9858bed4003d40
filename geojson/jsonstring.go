package geojson

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// This file holds JSON strings: reading them with their UTF-8 and
// surrogate checks, and decoding their escapes.

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// str reads a string starting at the opening quote and returns its raw
// content (escapes not decoded) and whether it contains escapes. Invalid
// UTF-8 and lone surrogates are reported once per string with
// RuleInvalidUTF8; control characters and bad escapes are syntax errors.
func (p *parser) str() (raw []byte, esc bool) {
	d := p.data
	start := p.i + 1
	i := start
	bad := false
	for {
		for i+8 <= len(d) { // eight plain ASCII bytes at a time
			if m := specialBytes(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(d) {
			p.i = i
			p.fail("unterminated string")
		}
		c := d[i]
		switch {
		case c == '"':
			p.i = i + 1
			if bad {
				p.report(RuleInvalidUTF8, "string is not valid UTF-8 (or escapes an unpaired surrogate)")
			}
			return d[start:i], esc
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				p.i = i + 1
				p.fail("unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					p.i = i
					p.fail("invalid \\u escape")
				}
				i += 6
				if r >= 0xD800 && r < 0xDC00 {
					if r2, ok := hex4(d, i+2); ok && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' && r2 >= 0xDC00 && r2 < 0xE000 {
						i += 6
					} else {
						bad = true
					}
				} else if r >= 0xDC00 && r < 0xE000 {
					bad = true
				}
			default:
				p.i = i
				p.fail("invalid escape in string")
			}
		case c < 0x20:
			p.i = i
			p.fail("control character in string")
		case c < 0x80:
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				bad = true
			}
			i += size
		}
	}
}

// specialBytes returns, for eight bytes of a string (little-endian, the
// first in the low byte), a mask whose lowest set bit is the high bit of
// the first byte that str must look at: a quote, a backslash, a control
// character or a byte of a multi-byte UTF-8 sequence; 0 when there is
// none. (Bits above the lowest may be set spuriously: each test's borrows
// run only upwards from a byte it rightly flags.)
func specialBytes(v uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := v^(ones*'"'), v^(ones*'\\')
	return (v | (v-ones*0x20)&^v | (quote-ones)&^quote | (backslash-ones)&^backslash) & highs
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		v := hexVal(c)
		if v < 0 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// unescapeName decodes the escapes of a raw string already checked by
// str. Raw strings without a backslash are returned as they are.
func unescapeName(raw []byte) []byte {
	hasEsc := false
	for _, c := range raw {
		if c == '\\' {
			hasEsc = true
			break
		}
	}
	if !hasEsc {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := hex4(raw, i+2)
			i += 6
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if r2, ok := hex4(raw, i+2); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
					i += 6
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, raw[i+1])
		}
		i += 2
	}
	return out
}
