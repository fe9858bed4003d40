package middleware

import (
	"crypto/sha256"
	"hash"
	"net/http"
	"sync"

	"github.com/geoidem/geoidem/keystore"
)

// fingerprint hashes what must match between a request and its retries:
// the method and the path as its identity has them (upper case, the
// NormalizedPath), the query and the body (or the body's canonical form).
// The query is included so that, say, ?dry-run=1 and a real run under one
// key are a mismatch, not a replay of each other.
func (m *Middleware) fingerprint(r *http.Request, id identity, body []byte) keystore.Fingerprint {
	content := body
	if m.canonical && len(body) > 0 {
		if c, err := canonicalize(body); err == nil {
			content = c
		}
	}
	const prefix = "geoidem fingerprint v1\x00"
	// The fields ahead of the body are laid out on the stack, and a small
	// request hashed from there without allocating; the buffer is small
	// too, as a frame of kilobytes would grow the stack of net/http's
	// connection goroutine on every request after a GC has shrunk it
	// (runtime.copystack under load). A larger request streams into a
	// pooled hash, the fields copied ahead of it.
	var stack [512]byte
	b := append(stack[:0], prefix...)
	b = append(append(b, id.method...), 0)
	b = append(append(b, id.path...), 0)
	b = append(append(b, r.URL.RawQuery...), 0)
	if len(b)+len(content) <= len(stack) {
		return sha256.Sum256(append(b, content...))
	}
	h := getHasher()
	defer h.put()
	h.buf = append(h.buf, b...)
	return h.sum(content)
}

// hasher is a SHA-256 state and a buffer for the short fields hashed ahead
// of a body, pooled: the fingerprint of a large request is hashed without
// copying its body and, mostly, without allocating.
type hasher struct {
	h   hash.Hash
	buf []byte
}

// maxPooledHashBuf bounds the buffer a hasher keeps between uses.
const maxPooledHashBuf = 4 << 10

var hashers = sync.Pool{New: func() any { return &hasher{h: sha256.New(), buf: make([]byte, 0, 512)} }}

func getHasher() *hasher {
	h := hashers.Get().(*hasher)
	h.h.Reset()
	h.buf = h.buf[:0]
	return h
}

// sum writes buf, then tail, and returns the digest.
func (h *hasher) sum(tail []byte) (out [sha256.Size]byte) {
	h.h.Write(h.buf)
	h.h.Write(tail)
	copy(out[:], h.h.Sum(h.buf[:0]))
	return out
}

func (h *hasher) put() {
	if cap(h.buf) <= maxPooledHashBuf {
		hashers.Put(h)
	}
}
