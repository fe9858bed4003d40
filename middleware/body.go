package middleware

import (
	"errors"
	"io"
	"net/http"
)

var errBodyTooLarge = errors.New("body too large")

// firstBodyBuffer is the most readBody allocates before the first bytes of a
// body arrive: the whole body when it declares no more than this.
const firstBodyBuffer = 16 << 10

// readBody reads r's body in full, bounded by MaxBodyBytes. Its memory
// follows the bytes received, never the Content-Length the client
// declares: the buffer starts at no more than firstBodyBuffer and doubles
// as bytes arrive, up to the declared length (or MaxBodyBytes+1 when none
// is declared, the one byte past the limit that tells a body too large).
// So a client that declares 1 MiB and sends one byte costs 16 KiB, and any
// body costs at most about twice its bytes received; a body that declares
// no more than 16 KiB is read in one allocation of its exact size.
func (m *Middleware) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > m.maxBody {
		return nil, errBodyTooLarge
	}
	limit := m.maxBody + 1
	if r.ContentLength >= 0 {
		limit = r.ContentLength // net/http reads no further
	}
	buf := make([]byte, 0, min(limit, firstBodyBuffer))
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
			return nil, err
		}
	}
	switch {
	case int64(len(buf)) > m.maxBody:
		return nil, errBodyTooLarge
	case r.ContentLength >= 0 && int64(len(buf)) < r.ContentLength:
		return nil, io.ErrUnexpectedEOF
	}
	return buf, nil
}
