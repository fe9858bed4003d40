package middleware

import (
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"sync"

	"github.com/geoidem/geoidem/internal/jcs"
	"github.com/geoidem/geoidem/keystore"
)

// fingerprint hashes what must match between a request and its retries:
// the method, the path (path, its NormalizedPath), the query and the body
// (or the body's canonical form). The query is included so that, say, ?dry-run=1 and a real run
// under one key are a mismatch, not a replay of each other.
func (m *Middleware) fingerprint(r *http.Request, path string, body []byte) keystore.Fingerprint {
	content := body
	if m.canonical && len(body) > 0 {
		if c, err := jcs.Canonicalize(body); err == nil {
			content = c
		}
	}
	const prefix = "geoidem fingerprint v1\x00"
	var stack [4096]byte // small requests hash from the stack, without allocating
	if n := len(prefix) + len(r.Method) + len(path) + len(r.URL.RawQuery) + 3 + len(content); n <= len(stack) {
		b := append(stack[:0], prefix...)
		b = append(append(b, r.Method...), 0)
		b = append(append(b, path...), 0)
		b = append(append(b, r.URL.RawQuery...), 0)
		return sha256.Sum256(append(b, content...))
	}
	h := hashers.Get().(hash.Hash)
	defer hashers.Put(h)
	h.Reset()
	io.WriteString(h, prefix)
	io.WriteString(h, r.Method)
	h.Write([]byte{0})
	io.WriteString(h, path)
	h.Write([]byte{0})
	io.WriteString(h, r.URL.RawQuery)
	h.Write([]byte{0})
	h.Write(content)
	var fp keystore.Fingerprint
	h.Sum(fp[:0])
	return fp
}

var hashers = sync.Pool{New: func() any { return sha256.New() }}
