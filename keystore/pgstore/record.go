package pgstore

import (
	"fmt"
	"net/http"

	"github.com/geoidem/geoidem/internal/record"
)

// The header column holds a recorded http.Header in keystore's header
// encoding (see record.AppendHeader), so that every byte of every value
// survives (a JSON or text column would mangle or refuse bytes that are not
// UTF-8, which HTTP allows in values). A nil header is stored as NULL, an
// empty one as the encoding of zero fields.

// encodeHeader appends the header column's value for h to dst, using its
// room (see record.AppendHeader), and returns it: nil for a nil header.
// A nil dst is allocated at the encoding's size.
func encodeHeader(dst []byte, h http.Header) []byte {
	switch {
	case h == nil:
		return nil
	case dst == nil:
		dst = make([]byte, 0, record.HeaderLen(h))
	}
	return record.AppendHeader(dst, h)
}

func decodeHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	h, err := record.DecodeHeader(b)
	if err != nil {
		return nil, fmt.Errorf("pgstore: stored header: %w", err)
	}
	return h, nil
}
