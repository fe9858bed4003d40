package pgstore

import (
	"fmt"
	"net/http"

	"github.com/geoidem/geoidem/keystore"
)

// The header column holds a recorded http.Header in keystore's header
// encoding (see keystore.AppendHeader), so that every byte of every value
// survives (a JSON or text column would mangle or refuse bytes that are not
// UTF-8, which HTTP allows in values). A nil header is stored as NULL, an
// empty one as the encoding of zero fields.

func encodeHeader(h http.Header) []byte {
	if h == nil {
		return nil
	}
	return keystore.AppendHeader(make([]byte, 0, keystore.HeaderLen(h)), h)
}

func decodeHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	h, err := keystore.DecodeHeader(b)
	if err != nil {
		return nil, fmt.Errorf("pgstore: stored header: %w", err)
	}
	return h, nil
}
