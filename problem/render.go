package problem

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
)

// doc is a problem document's standard members. An empty Detail is left
// out.
type doc struct {
	Type   string
	Title  string
	Status int
	Detail string
}

// member is an extension member: its name and its value, already encoded
// as JSON.
type member struct {
	Name  string
	Value []byte
}

// render renders d followed by the extension members ext, in order: the
// standard members in a fixed order (type, title, status, detail), JSON
// without HTML escaping.
func render(d doc, ext ...member) []byte {
	size := 48 + len(d.Type) + len(d.Title) + len(d.Detail)
	for _, m := range ext {
		size += len(m.Name) + len(m.Value) + 4
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"type":`)
	appendString(&b, d.Type)
	b.WriteString(`,"title":`)
	appendString(&b, d.Title)
	b.WriteString(`,"status":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(d.Status), 10))
	if d.Detail != "" {
		b.WriteString(`,"detail":`)
		appendString(&b, d.Detail)
	}
	for _, m := range ext {
		b.WriteByte(',')
		appendString(&b, m.Name)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// AppendString appends s as a JSON string, without HTML escaping; invalid
// UTF-8 becomes U+FFFD, as encoding/json does.
func appendString(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			appendJSON(b, s)
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
func appendJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("problem: " + err.Error())
	}
	b.Truncate(b.Len() - 1) // the encoder's newline
}

// writeBody answers status with body, a problem document, not to be
// cached. It drops any Content-Length the handler set, keeps the other
// headers set before it (a WWW-Authenticate challenge, say), and adds
// Retry-After in whole seconds rounded up when retryAfter is positive.
func writeBody(w http.ResponseWriter, status int, body []byte, retryAfter time.Duration) {
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
