package middleware

import (
	"net/http"
	"strings"
)

// NormalizedPath returns r's path in one spelling per route of
// [http.ServeMux]: the path the default scope and the fingerprint use, and
// the one a custom Config.Scope should use.
//
// ServeMux routes a request by its escaped path split at each '/', each
// segment percent-decoded: /features, /%66eatures and /feature%73 reach
// the same handler, while /a%2Fb (one segment, "a/b") and /a/b (two) are
// different routes. NormalizedPath applies RFC 3986 section 6.2.2 to each
// segment, further than the RFC's syntax-based step, as far as ServeMux
// does: every percent-encoding is decoded, then every byte that may not
// stand for itself in a segment (anything but the unreserved characters,
// the sub-delimiters, ':' and '@') is encoded again, with upper-case hex
// digits. So %2F stays distinct from '/', %25 from '%', and a segment that
// decodes to "." or ".." but was not written so stays encoded, as cleaning
// would otherwise treat it differently. Two paths have the same
// NormalizedPath exactly when ServeMux routes them alike, and
// NormalizedPath of a normalised path is itself.
//
// A path already in that form is returned as it is, without allocating.
func NormalizedPath(r *http.Request) string {
	return normalizePath(r.URL.EscapedPath())
}

// normalizePath is NormalizedPath of an escaped path.
func normalizePath(p string) string {
	if isNormalPath(p) {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			writeSegment(&b, p)
			return b.String()
		}
		writeSegment(&b, p[:i])
		b.WriteByte('/')
		p = p[i+1:]
	}
}

// isNormalPath reports whether p needs no change: no percent-encoding, and
// only bytes that stand for themselves.
func isNormalPath(p string) bool {
	for i := 0; i < len(p); i++ {
		if !normalPathByte[p[i]] {
			return false
		}
	}
	return true
}

// normalPathByte marks the bytes a normal path may hold: '/' and each
// pchar. Every request's path is checked, a table lookup a byte.
var normalPathByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '/' || isPchar(byte(c))
	}
	return t
}()

// writeSegment writes the normalised form of one escaped path segment.
// Like ServeMux, it decodes a segment only if all its percent-encodings
// are valid; otherwise every byte stands for itself.
func writeSegment(b *strings.Builder, seg string) {
	var stack [64]byte
	dec, ok := stack[:0], true
	for i := 0; i < len(seg) && ok; i++ {
		c := seg[i]
		if c == '%' {
			if ok = i+2 < len(seg) && isHex(seg[i+1]) && isHex(seg[i+2]); ok {
				c = unhex(seg[i+1])<<4 | unhex(seg[i+2])
				i += 2
			}
		}
		dec = append(dec, c)
	}
	if !ok {
		dec = append(dec[:0], seg...)
	}
	if d := string(dec); (d == "." || d == "..") && seg != d {
		b.WriteString(strings.Repeat("%2E", len(d))) // not the "." cleaning removes
		return
	}
	const hexDigits = "0123456789ABCDEF"
	for _, c := range dec {
		if isPchar(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
}

// isPchar reports whether c stands for itself in a path segment (RFC 3986
// pchar, but for pct-encoded): unreserved, sub-delims, ':' or '@'.
func isPchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
