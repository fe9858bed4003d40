// Package problem renders and writes RFC 9457 problem documents: the one
// way every geoidem package answers an error. The documents are JSON
// without HTML escaping, their standard members in a fixed order (type,
// title, status, detail), followed by any extension members.
package problem

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
)

// MediaType is the content type of a problem document (RFC 9457 §3).
const MediaType = "application/problem+json"

// TypeBase is the prefix of every geoidem problem type URI; the fragment
// names the problem, listed in docs/problems.md.
const TypeBase = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#"

// Doc is a problem document's standard members. An empty Detail is left
// out.
type Doc struct {
	Type   string
	Title  string
	Status int
	Detail string
}

// Member is an extension member: its name and its value, already encoded
// as JSON.
type Member struct {
	Name  string
	Value []byte
}

// JSON renders d followed by the extension members ext, in order.
func JSON(d Doc, ext ...Member) []byte {
	size := 48 + len(d.Type) + len(d.Title) + len(d.Detail)
	for _, m := range ext {
		size += len(m.Name) + len(m.Value) + 4
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"type":`)
	AppendString(&b, d.Type)
	b.WriteString(`,"title":`)
	AppendString(&b, d.Title)
	b.WriteString(`,"status":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(d.Status), 10))
	if d.Detail != "" {
		b.WriteString(`,"detail":`)
		AppendString(&b, d.Detail)
	}
	for _, m := range ext {
		b.WriteByte(',')
		AppendString(&b, m.Name)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// AppendString appends s as a JSON string, without HTML escaping; invalid
// UTF-8 becomes U+FFFD, as encoding/json does.
func AppendString(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			AppendJSON(b, s)
			return
		}
	}
	b.WriteByte('"') // printable ASCII without quote or backslash: as it is
	b.WriteString(s)
	b.WriteByte('"')
}

// AppendJSON appends the JSON encoding of v, without HTML escaping. v must
// be a value encoding/json encodes without error (strings, numbers,
// booleans and structs of them).
func AppendJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("problem: " + err.Error())
	}
	b.Truncate(b.Len() - 1) // the encoder's newline
}

// Header returns the header a recorded problem document is replayed with:
// its content type, not to be cached.
func Header() http.Header {
	return http.Header{"Content-Type": {MediaType}, "Cache-Control": {"no-store"}}
}

// Write answers status with body, a problem document, not to be cached. It
// drops any Content-Length the handler set, keeps the other headers set
// before it (a WWW-Authenticate challenge, say), and adds Retry-After in
// whole seconds rounded up when retryAfter is positive.
func Write(w http.ResponseWriter, status int, body []byte, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", MediaType)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if retryAfter > 0 {
		h.Set("Retry-After", answer.FormatRetryAfter(retryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
