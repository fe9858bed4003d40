package client

import (
	"encoding/base64"
	"maps"
	"slices"
	"unicode/utf8"
)

// appendLine appends l as one JSON line, byte for byte what encoding/json
// writes with HTML escaping off (the file's format), and reports whether
// it could: it writes the lines the journal writes most, whose strings
// need no escaping and whose body, if any, is known compact; for any
// other line it returns false, and the caller uses encoding/json. It
// spares a delivery the reflection, the buffers and the two scans of the
// body that encoding/json costs a record.
func appendLine(b []byte, l *journalLine) ([]byte, bool) {
	if l.Body != nil && !l.compact {
		return b, false
	}
	b = append(b, `{"op":`...)
	b, ok := appendPlain(b, l.Op)
	b = append(b, `,"method":`...)
	b, ok2 := appendPlain(b, l.Method)
	b = append(b, `,"url":`...)
	b, ok3 := appendPlain(b, l.URL)
	b = append(b, `,"key":`...)
	b, ok4 := appendPlain(b, l.Key)
	if !ok || !ok2 || !ok3 || !ok4 {
		return b, false
	}
	if l.ContentType != "" {
		b = append(b, `,"content_type":`...)
		if b, ok = appendPlain(b, l.ContentType); !ok {
			return b, false
		}
	}
	if len(l.Header) > 0 {
		b = append(b, `,"header":{`...)
		for i, k := range slices.Sorted(maps.Keys(l.Header)) {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPlain(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			vs := l.Header[k]
			if vs == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for i, v := range vs {
				if i > 0 {
					b = append(b, ',')
				}
				if b, ok = appendPlain(b, v); !ok {
					return b, false
				}
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if len(l.Body) > 0 {
		b = append(b, `,"body":`...)
		b = append(b, l.Body...)
	}
	if len(l.BodyBase64) > 0 {
		b = append(b, `,"body_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, l.BodyBase64)
		b = append(b, '"')
	}
	if l.Empty {
		b = append(b, `,"empty":true`...)
	}
	b = append(b, `,"time":"`...)
	var err error
	if b, err = l.Time.AppendText(b); err != nil {
		return b, false
	}
	b = append(b, '"')
	if l.Outcome != "" {
		b = append(b, `,"outcome":`...)
		if b, ok = appendPlain(b, l.Outcome); !ok {
			return b, false
		}
	}
	if !l.Ended.IsZero() {
		b = append(b, `,"ended":"`...)
		if b, err = l.Ended.AppendText(b); err != nil {
			return b, false
		}
		b = append(b, '"')
	}
	return append(b, "}\n"...), true
}

// appendPlain appends s as a JSON string when it needs no escaping:
// printable ASCII without a quote or a backslash.
func appendPlain(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// lineSize is room enough for l's line when appendLine writes it: the
// line is then one allocation.
func lineSize(l *journalLine) int {
	n := 256 + len(l.Op) + len(l.Method) + len(l.URL) + len(l.Key) + len(l.ContentType) + len(l.Outcome) +
		len(l.Body) + base64.StdEncoding.EncodedLen(len(l.BodyBase64))
	for k, vs := range l.Header {
		n += len(k) + 8
		for _, v := range vs {
			n += len(v) + 3
		}
	}
	return n
}

// plainJSON reports whether p, valid JSON, is as encoding/json would
// write it with HTML escaping on: no space outside its strings, and no
// '<', '>', '&', U+2028 or U+2029 anywhere. One scan of p.
func plainJSON(p []byte) bool {
	inString, escaped := false, false
	for i, c := range p {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(p) && p[i+1] == 0x80 && p[i+2]&^1 == 0xA8: // U+2028, U+2029
			return false
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}
