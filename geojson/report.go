package geojson

import "strconv"

// This file holds how the parser reports and stops: the JSON pointer to
// the value being parsed, problems, syntax errors and limits.

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
	// Past maxPointerBytes the pointer is cut (newProblem): build little
	// more than that, however long the names.
	var b []byte
	for _, e := range p.path {
		if len(b) > maxPointerBytes {
			break
		}
		b = append(b, '/')
		if e.key == nil {
			b = strconv.AppendInt(b, int64(e.idx), 10)
		} else {
			b = appendPointerToken(b, unescapeName(rawPrefix(e.key, maxPointerBytes+1)))
		}
	}
	for _, e := range extra {
		if len(b) > maxPointerBytes {
			break
		}
		b = append(b, '/')
		switch e := e.(type) {
		case int:
			b = strconv.AppendInt(b, int64(e), 10)
		case string:
			b = appendPointerToken(b, []byte(e[:min(len(e), maxPointerBytes+1)]))
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

// listing reports whether a problem found now would be listed. When it
// would not (the parse is quiet, or Options.MaxProblems are listed), it
// counts the problem as report does: the caller then skips building its
// message and pointer, so that problems past the listed ones cost nothing.
func (p *parser) listing() bool {
	if p.quiet > 0 {
		return false
	}
	if len(p.probs) >= p.o.MaxProblems {
		p.nerr++
		p.truncated = true
		return false
	}
	return true
}
