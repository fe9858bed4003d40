package geojson

import (
	"math"
	"strconv"
)

// This file holds the JSON layer of the single-pass parser: whitespace,
// punctuation, literals, member names and generic values. Strings,
// numbers and duplicate-member detection have files of their own.

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
	if p.i < len(p.data) && p.data[p.i] > ' ' { // no whitespace: the usual case
		return p.data[p.i]
	}
	return p.peekWS()
}

// peekWS is peek past whitespace.
func (p *parser) peekWS() byte {
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
	if p.i < len(p.data) { // no whitespace: the usual case
		switch p.data[p.i] {
		case ',':
			p.i++
			return true
		case closing:
			p.i++
			return false
		}
	}
	return p.nextWS(closing)
}

// nextWS is next past whitespace.
func (p *parser) nextWS(closing byte) bool {
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

func (p *parser) literal(lit string) {
	if len(p.data)-p.i < len(lit) || string(p.data[p.i:p.i+len(lit)]) != lit {
		p.fail("invalid literal")
	}
	p.i += len(lit)
}

// member reads a member name and the colon after it, checks it for
// duplicates, and returns the raw and decoded name.
func (p *parser) member(s *dupSet) (raw, name []byte) {
	raw, name = p.memberName()
	if p.seen(s, name) {
		p.duplicate(name)
	}
	return raw, name
}

// memberName reads a member name and the colon after it, and returns the
// raw and decoded name; the caller checks it for duplicates.
func (p *parser) memberName() (raw, name []byte) {
	if p.peek() != '"' {
		p.fail("expected member name, found " + p.found())
	}
	raw, esc := p.str()
	name = raw
	if esc {
		name = unescapeName(raw)
	}
	if p.i < len(p.data) && p.data[p.i] == ':' { // no whitespace: the usual case
		p.i++
	} else {
		p.expect(':')
	}
	return raw, name
}

// duplicate reports a member name the object being parsed already has.
func (p *parser) duplicate(name []byte) {
	if p.listing() {
		p.report(RuleDuplicateMember, "duplicate member name "+strconv.Quote(string(name))+" makes the object ambiguous", string(name))
	}
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
			if p.listing() {
				p.report(RuleNumberTooLarge, "number "+string(raw)+" does not fit a float64")
			}
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
