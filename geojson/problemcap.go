package geojson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/geoidem/geoidem/problem"
)

// This file keeps problems and problem documents in proportion to a
// fixed bound rather than to the input: see maxProblemDocumentBytes.

// newProblem returns the problem with pointer and message cut to
// maxPointerBytes and maxDetailBytes, marked Truncated when either was
// cut. A cut pointer is a prefix of the real one (never ending inside a
// "~0" or "~1" escape or a UTF-8 sequence); a cut message ends with "…".
func newProblem(pointer, rule, msg string) Violation {
	pr := Violation{Pointer: pointer, Rule: rule, Message: msg}
	if len(pointer) > maxPointerBytes {
		pr.Pointer = cutUTF8(pointer, maxPointerBytes)
		if pr.Pointer != "" && pr.Pointer[len(pr.Pointer)-1] == '~' {
			pr.Pointer = pr.Pointer[:len(pr.Pointer)-1]
		}
		pr.Truncated = true
	}
	if len(msg) > maxDetailBytes {
		pr.Message = cutUTF8(msg, maxDetailBytes-len("…")) + "…"
		pr.Truncated = true
	}
	return pr
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does
// not end inside a UTF-8 sequence (s[:n] when s is not UTF-8 there).
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// rawPrefix returns the shortest prefix of the raw (still escaped,
// already checked) string raw that decodes to at least n bytes, or raw
// when it decodes to fewer, without cutting an escape sequence: pointers
// are built from it without decoding a whole huge member name for every
// problem. Every byte and every escape decodes to at least one byte, so
// the prefix is at most 6n bytes long.
func rawPrefix(raw []byte, n int) []byte {
	i := 0
	for dec := 0; i < len(raw) && dec < n; dec++ {
		switch {
		case raw[i] != '\\':
			i++
		case raw[i+1] == 'u':
			i += 6
		default:
			i += 2
		}
	}
	return raw[:i]
}

// problemDocReserve is room kept in a problem document for its members
// other than "errors": type, title, status, a detail of maxDetailBytes
// (up to six bytes each once escaped) and truncated.
const problemDocReserve = 6*maxDetailBytes + 1<<10

// problemDoc renders an RFC 9457 problem document as problemDocFit does,
// with a fixed detail.
func problemDoc(typ, title string, status int, detail string, errs []Violation) []byte {
	return problemDocFit(typ, title, status, func(int) string { return detail }, errs, false)
}

// problemDocFit renders an RFC 9457 problem document of at most
// maxProblemDocumentBytes: a [problem.Details] of typ, title, status and
// detail, followed by "errors", listing the problems of errs that fit (no
// errs leaves it out), each cut as by newProblem and encoded as a
// Violation, and "truncated": true when truncated is set or some problems
// did not fit. detail is called with the number listed; it never returns
// "" (the document would leave the member out): each caller's detail
// starts with fixed text.
func problemDocFit(typ, title string, status int, detail func(listed int) string, errs []Violation, truncated bool) []byte {
	var list bytes.Buffer
	listed := 0
	if len(errs) > 0 {
		list.WriteByte('[')
		for _, pr := range errs {
			n := list.Len()
			if listed > 0 {
				list.WriteByte(',')
			}
			q := newProblem(pr.Pointer, pr.Rule, pr.Message)
			q.Truncated = q.Truncated || pr.Truncated
			appendJSON(&list, q)
			if list.Len()+1 > maxProblemDocumentBytes-problemDocReserve {
				list.Truncate(n)
				truncated = true
				break
			}
			listed++
		}
		list.WriteByte(']')
	}
	doc := problem.Details{Type: typ, Title: title, Status: status, Detail: newProblem("", "", detail(listed)).Message}.ProblemJSON()
	if len(errs) == 0 && !truncated {
		return doc
	}
	// The document without its closing brace, then the members of its own.
	const errorsName, truncatedMember = `,"errors":`, `,"truncated":true`
	out := make([]byte, 0, len(doc)+len(errorsName)+list.Len()+len(truncatedMember))
	out = append(out, doc[:len(doc)-1]...)
	if len(errs) > 0 {
		out = append(out, errorsName...)
		out = append(out, list.Bytes()...)
	}
	if truncated {
		out = append(out, truncatedMember...)
	}
	return append(out, '}')
}

// appendJSON appends the JSON encoding of v, without HTML escaping, as
// package problem writes its documents. v must be a value encoding/json
// encodes without error.
func appendJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("geojson: " + err.Error())
	}
	b.Truncate(b.Len() - 1) // the encoder's newline
}
