package geojson

import (
	"bytes"
	"unicode/utf8"

	"github.com/geoidem/geoidem/internal/problem"
)

// This file keeps problems and problem documents in proportion to a
// fixed bound rather than to the input: see [MaxProblemDocumentBytes].

// newProblem returns the problem with pointer and message cut to
// MaxPointerBytes and MaxDetailBytes, marked Truncated when either was
// cut. A cut pointer is a prefix of the real one (never ending inside a
// "~0" or "~1" escape or a UTF-8 sequence); a cut message ends with "…".
func newProblem(pointer, rule, msg string) Violation {
	pr := Violation{Pointer: pointer, Rule: rule, Message: msg}
	if len(pointer) > MaxPointerBytes {
		pr.Pointer = cutUTF8(pointer, MaxPointerBytes)
		if pr.Pointer != "" && pr.Pointer[len(pr.Pointer)-1] == '~' {
			pr.Pointer = pr.Pointer[:len(pr.Pointer)-1]
		}
		pr.Truncated = true
	}
	if len(msg) > MaxDetailBytes {
		pr.Message = cutUTF8(msg, MaxDetailBytes-len("…")) + "…"
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
// other than "errors": type, title, status, a detail of MaxDetailBytes
// (up to six bytes each once escaped) and truncated.
const problemDocReserve = 6*MaxDetailBytes + 1<<10

// jsonTrue is the value of "truncated", kept here so that a truncated
// document does not allocate it each time.
var jsonTrue = []byte("true")

// problemDoc renders an RFC 9457 problem document as problemDocFit does,
// with a fixed detail.
func problemDoc(typ, title string, status int, detail string, errs []Violation) []byte {
	return problemDocFit(typ, title, status, func(int) string { return detail }, errs, false)
}

// problemDocFit renders an RFC 9457 problem document of at most
// MaxProblemDocumentBytes with [problem.JSON]. It lists the problems
// of errs that fit (no errs leaves "errors" out), each cut as by
// newProblem, and adds "truncated": true when truncated is set or some
// problems did not fit. detail is called with the number listed; it
// never returns "" (problem.JSON would leave the member out): each
// caller's detail starts with fixed text.
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
			problem.AppendJSON(&list, q)
			if list.Len()+1 > MaxProblemDocumentBytes-problemDocReserve {
				list.Truncate(n)
				truncated = true
				break
			}
			listed++
		}
		list.WriteByte(']')
	}
	ext := make([]problem.Member, 0, 2)
	if len(errs) > 0 {
		ext = append(ext, problem.Member{Name: "errors", Value: list.Bytes()})
	}
	if truncated {
		ext = append(ext, problem.Member{Name: "truncated", Value: jsonTrue})
	}
	d := problem.Doc{Type: typ, Title: title, Status: status, Detail: newProblem("", "", detail(listed)).Message}
	return problem.JSON(d, ext...)
}
