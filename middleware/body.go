package middleware

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

var errBodyTooLarge = errors.New("body too large")

func (m *Middleware) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > m.maxBody {
		return nil, errBodyTooLarge
	}
	if r.ContentLength >= 0 { // declared: read exactly that, in one allocation
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	n, err := buf.ReadFrom(io.LimitReader(r.Body, m.maxBody+1))
	if err != nil {
		return nil, err
	}
	if n > m.maxBody {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
}
