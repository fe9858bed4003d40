package httpbody

import (
	"bytes"
	"io"
)

// Buffered is a request body already in memory, read in full by a front
// door before the handlers run. [Read] returns its bytes as they are,
// without a copy, when nothing of it has been read yet: a reader of them
// must not write to them.
type Buffered struct {
	r *bytes.Reader
	b []byte
}

// NewBuffered returns a body over b.
func NewBuffered(b []byte) *Buffered { return &Buffered{r: bytes.NewReader(b), b: b} }

func (b *Buffered) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close does nothing: the body is in memory.
func (b *Buffered) Close() error { return nil }

// take returns the whole body and leaves it read, or false when some of
// it has been read already.
func (b *Buffered) take() ([]byte, bool) {
	if b.r.Len() != len(b.b) {
		return nil, false
	}
	_, _ = b.r.Seek(0, io.SeekEnd)
	return b.b, true
}
