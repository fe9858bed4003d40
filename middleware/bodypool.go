package middleware

import (
	"net/http"
	"sync"
)

// Request bodies are read into pooled buffers, chosen by the length a
// request declares, so that a body of at most maxPooledBody bytes costs no
// allocation of its own. A buffer goes back to its pool only once nothing
// can read the body any more: after a request that did not run the
// handler, or after the handler (and no validator, which may keep the
// bytes it was given) returned. What the pools hold is dropped over two
// garbage collections, as any sync.Pool's: at most 64 KiB a buffer, and
// only as many as requests were reading bodies at once.
const (
	minPooledBody = 1 << 10 // the smallest class
	maxPooledBody = 64 << 10
)

// bodyBuffer is one pooled buffer, its capacity a class's.
type bodyBuffer struct{ b []byte }

// bodyPools holds the classes minPooledBody, 4×, 16×…, up to maxPooledBody.
var bodyPools [4]sync.Pool

// bodyClass returns the class of a body declared n bytes long, -1 when none
// is pooled: a length not declared (chunked) or over maxPooledBody.
func bodyClass(n int64) int {
	if n < 0 || n > maxPooledBody {
		return -1
	}
	c, size := 0, int64(minPooledBody)
	for size < n {
		c, size = c+1, size*4
	}
	return c
}

// getBody returns a buffer for r's body, nil when none is pooled for it.
func getBody(r *http.Request) *bodyBuffer {
	c := bodyClass(r.ContentLength)
	if c < 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if b, ok := bodyPools[c].Get().(*bodyBuffer); ok {
		return b
	}
	return &bodyBuffer{b: make([]byte, 0, minPooledBody<<(2*c))}
}

// putBody gives b back to its pool; nil is ignored.
func putBody(b *bodyBuffer) {
	if b == nil {
		return
	}
	bodyPools[bodyClass(int64(cap(b.b)))].Put(b)
}
