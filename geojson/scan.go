package geojson

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// This file holds the JSON layer of the single-pass parser: whitespace,
// strings (with UTF-8 and surrogate checks), numbers, literals, and
// generic values with duplicate-member detection.

// abort is the panic payload used to unwind the parser on malformed JSON
// (err is a *SyntaxError) or an exceeded limit (err is nil; the limit
// problem has been recorded). It never escapes the package: parse
// recovers it and re-panics anything else.
type abort struct{ err error }

// pathElem is one step of the JSON pointer to the value being parsed.
type pathElem struct {
	key []byte // raw member name as in the input (maybe escaped); nil for an array index
	idx int
}

func (p *parser) fail(msg string) {
	panic(abort{&SyntaxError{Offset: p.i, Msg: msg}})
}

// limit records a limit problem and stops the parse.
func (p *parser) limit(rule, msg string) {
	p.quiet = 0
	p.report(rule, msg)
	panic(abort{})
}

func (p *parser) enter() {
	p.depth++
	if p.depth > p.o.MaxDepth {
		p.limit(RuleLimitDepth, "nesting deeper than "+strconv.Itoa(p.o.MaxDepth)+" levels")
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) pushKey(k []byte) { p.path = append(p.path, pathElem{key: k}) }
func (p *parser) pushIdx(i int)    { p.path = append(p.path, pathElem{idx: i}) }
func (p *parser) pop()             { p.path = p.path[:len(p.path)-1] }

// pointer renders the current path, followed by extra (string keys or
// int indices), as an RFC 6901 JSON pointer.
func (p *parser) pointer(extra ...any) string {
	// Past MaxPointerBytes the pointer is cut (newProblem): build little
	// more than that, however long the names.
	var b []byte
	for _, e := range p.path {
		if len(b) > MaxPointerBytes {
			break
		}
		b = append(b, '/')
		if e.key == nil {
			b = strconv.AppendInt(b, int64(e.idx), 10)
		} else {
			b = appendPointerToken(b, unescapeName(rawPrefix(e.key, MaxPointerBytes+1)))
		}
	}
	for _, e := range extra {
		if len(b) > MaxPointerBytes {
			break
		}
		b = append(b, '/')
		switch e := e.(type) {
		case int:
			b = strconv.AppendInt(b, int64(e), 10)
		case string:
			b = appendPointerToken(b, []byte(e[:min(len(e), MaxPointerBytes+1)]))
		}
	}
	return string(b)
}

func appendPointerToken(b, tok []byte) []byte {
	for _, c := range tok {
		switch c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}

// report records a problem at the current path plus extra.
func (p *parser) report(rule, msg string, extra ...any) {
	if p.quiet > 0 {
		return
	}
	p.nerr++
	if len(p.probs) >= p.o.MaxProblems {
		p.truncated = true
		return
	}
	p.probs = append(p.probs, newProblem(p.pointer(extra...), rule, msg))
}

func (p *parser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, failing at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.i >= len(p.data) {
		p.fail("unexpected end of input")
	}
	return p.data[p.i]
}

func (p *parser) expect(c byte) {
	if p.peek() != c {
		p.fail("expected " + strconv.QuoteRune(rune(c)) + ", found " + p.found())
	}
	p.i++
}

func (p *parser) found() string {
	if p.i >= len(p.data) {
		return "end of input"
	}
	c := p.data[p.i]
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

// next reads ',' or the closing byte after an element and reports
// whether another element follows.
func (p *parser) next(closing byte) bool {
	c := p.peek()
	if c == ',' {
		p.i++
		return true
	}
	if c == closing {
		p.i++
		return false
	}
	p.fail("expected ',' or " + strconv.QuoteRune(rune(closing)) + ", found " + p.found())
	return false
}

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

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// num reads a JSON number and returns its value, correctly rounded, and
// its raw text. A number too large for float64 yields ±Inf.
func (p *parser) num() (float64, []byte) {
	d := p.data
	start := p.i
	i := start
	neg := false
	if i < len(d) && d[i] == '-' {
		neg = true
		i++
	}
	var mant uint64
	digits := 0 // significant digits accumulated in mant
	exp10 := 0
	exact := true
	if i >= len(d) {
		p.i = i
		p.fail("invalid number")
	}
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			if digits < 19 {
				mant = mant*10 + uint64(d[i]-'0')
				digits++
			} else {
				exact = false
				exp10++
			}
			i++
		}
	default:
		p.i = i
		p.fail("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.i = i
			p.fail("invalid number: digit expected after '.'")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			if digits < 19 {
				if mant != 0 || d[i] != '0' {
					digits++
				}
				mant = mant*10 + uint64(d[i]-'0')
				exp10--
			} else {
				exact = false
			}
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.i = i
			p.fail("invalid number: digit expected in exponent")
		}
		exact = false // leave exponents to strconv
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.i = i
	raw := d[start:i]
	if exact && mant < 1<<53 && exp10 >= -22 && exp10 <= 0 {
		f := float64(mant) / pow10[-exp10]
		if neg {
			f = -f
		}
		return f, raw
	}
	f, err := strconv.ParseFloat(unsafe.String(&raw[0], len(raw)), 64)
	if err != nil && !math.IsInf(f, 0) && f != 0 {
		// Syntax was checked above; any other error cannot happen.
		p.fail("invalid number")
	}
	return f, raw
}

func (p *parser) literal(lit string) {
	if len(p.data)-p.i < len(lit) || string(p.data[p.i:p.i+len(lit)]) != lit {
		p.fail("invalid literal")
	}
	p.i += len(lit)
}

// dupSet detects duplicate member names in one object: a linear scan of
// the shared names stack for small objects, a map beyond that.
type dupSet struct {
	mark int
	m    map[string]struct{}
}

const dupLinearMax = 16

// seen records name and reports whether the object already had it.
func (p *parser) seen(s *dupSet, name []byte) bool {
	if s.m != nil {
		if _, ok := s.m[string(name)]; ok {
			return true
		}
		s.m[string(name)] = struct{}{}
		return false
	}
	names := p.names[s.mark:]
	for _, n := range names {
		if string(n) == string(name) {
			return true
		}
	}
	if len(names) >= dupLinearMax {
		s.m = make(map[string]struct{}, 2*dupLinearMax)
		for _, n := range names {
			s.m[string(n)] = struct{}{}
		}
		s.m[string(name)] = struct{}{}
		return false
	}
	p.names = append(p.names, name)
	return false
}

func (p *parser) endDup(s *dupSet) { p.names = p.names[:s.mark] }

// member reads a member name and the colon after it, checks it for
// duplicates, and returns the raw and decoded name.
func (p *parser) member(s *dupSet) (raw, name []byte) {
	if p.peek() != '"' {
		p.fail("expected member name, found " + p.found())
	}
	raw, esc := p.str()
	name = raw
	if esc {
		name = unescapeName(raw)
	}
	if p.seen(s, name) {
		p.report(RuleDuplicateMember, "duplicate member name "+strconv.Quote(string(name))+" makes the object ambiguous", string(name))
	}
	p.expect(':')
	return raw, name
}

// value parses any JSON value. With build it returns the value as
// encoding/json would decode it into an any (numbers as float64);
// otherwise it returns nil.
func (p *parser) value(build bool) any {
	switch c := p.peek(); {
	case c == '{':
		p.enter()
		p.i++
		var m map[string]any
		if build {
			m = map[string]any{}
		}
		s := dupSet{mark: len(p.names)}
		if p.peek() == '}' {
			p.i++
		} else {
			for {
				raw, name := p.member(&s)
				p.pushKey(raw)
				v := p.value(build)
				p.pop()
				if build {
					m[string(name)] = v
				}
				if !p.next('}') {
					break
				}
			}
		}
		p.endDup(&s)
		p.leave()
		if build {
			return m
		}
		return nil
	case c == '[':
		p.enter()
		p.i++
		var a []any
		if build {
			a = []any{}
		}
		if p.peek() == ']' {
			p.i++
		} else {
			for n := 0; ; n++ {
				p.pushIdx(n)
				v := p.value(build)
				p.pop()
				if build {
					a = append(a, v)
				}
				if !p.next(']') {
					break
				}
			}
		}
		p.leave()
		if build {
			return a
		}
		return nil
	case c == '"':
		raw, _ := p.str()
		if build {
			return string(unescapeName(raw))
		}
		return nil
	case c == 't':
		p.literal("true")
		return build
	case c == 'f':
		p.literal("false")
		if build {
			return false
		}
		return nil
	case c == 'n':
		p.literal("null")
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		f, raw := p.num()
		if math.IsInf(f, 0) {
			p.report(RuleNumberTooLarge, "number "+string(raw)+" does not fit a float64")
		}
		if build {
			return f
		}
		return nil
	default:
		p.fail("invalid character " + p.found() + " looking for a value")
		return nil
	}
}

// kindOf classifies a value by its first byte, for type messages.
func kindOf(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return "a number"
}
