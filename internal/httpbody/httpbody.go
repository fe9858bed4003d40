// Package httpbody reads request bodies in full, bounded, at a memory cost
// that follows the bytes received rather than the length a client declares.
// It is the one body reader of every geoidem package that reads one.
package httpbody

import (
	"errors"
	"io"
	"net/http"
)

// ErrTooLarge is returned for a body longer than the limit: declared so in
// its Content-Length, sent so, or cut short by an http.MaxBytesReader the
// server put in front.
var ErrTooLarge = errors.New("body too large")

// firstBuffer is the most Read allocates before the first bytes of a body
// arrive: the whole body when it declares no more than this.
const firstBuffer = 16 << 10

// Read reads r's body in full, at most max bytes. A body over max fails
// with ErrTooLarge; one shorter than its Content-Length with
// io.ErrUnexpectedEOF; any other read error is returned as it is. A
// request without a body reads as nil.
//
// Its memory follows the bytes received, never the Content-Length the
// client declares: the buffer starts at no more than 16 KiB and doubles as
// bytes arrive, up to the declared length (or max+1 when none is declared,
// the one byte past the limit that tells a body too large). So a client
// that declares 1 MiB and sends one byte costs 16 KiB, and any body costs
// at most about twice its bytes received; a body that declares no more
// than 16 KiB is read in one allocation of its exact size. A [Buffered]
// body not yet read is returned as it is, without a copy.
func Read(r *http.Request, max int64) ([]byte, error) {
	return ReadInto(nil, r, max)
}

// ReadInto is Read reading into buf's room first (its length is ignored):
// a body that fits in it is read without allocating, and the bytes
// returned are then buf's; a larger one grows from there as Read's does.
// Never more than the limit is asked of the body at once, whatever buf's
// capacity. Hand buf to another request only once nothing reads the bytes
// returned any more.
func ReadInto(buf []byte, r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > max {
		return nil, ErrTooLarge
	}
	if b, ok := r.Body.(*Buffered); ok {
		if body, ok := b.take(); ok {
			if int64(len(body)) > max {
				return nil, ErrTooLarge
			}
			return body, nil
		}
	}
	limit := max + 1
	if r.ContentLength >= 0 {
		limit = r.ContentLength // net/http reads no further
	}
	if buf != nil && int64(cap(buf)) >= min(limit, firstBuffer) {
		buf = buf[:0:min(int64(cap(buf)), limit)]
	} else {
		buf = make([]byte, 0, min(limit, firstBuffer))
	}
	var probe []byte // reads past a full buffer, so it grows only for bytes received
	for int64(len(buf)) < limit {
		dst := buf[len(buf):cap(buf)]
		if len(dst) == 0 {
			if probe == nil {
				probe = make([]byte, 512)
			}
			dst = probe[:min(int64(len(probe)), limit-int64(len(buf)))]
		}
		n, err := r.Body.Read(dst)
		if len(buf) < cap(buf) {
			buf = buf[:len(buf)+n]
		} else if n > 0 {
			grown := make([]byte, len(buf), min(limit, 2*int64(cap(buf))))
			copy(grown, buf)
			buf = append(grown, probe[:n]...)
		}
		if err == io.EOF {
			break
		} else if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, ErrTooLarge
			}
			return nil, err
		}
	}
	switch {
	case int64(len(buf)) > max:
		return nil, ErrTooLarge
	case r.ContentLength >= 0 && int64(len(buf)) < r.ContentLength:
		return nil, io.ErrUnexpectedEOF
	}
	return buf, nil
}
