package pgstore

import "net/http"

// Internals for the tests and for the hand-written baseline in the
// benchmarks.

func ClaimSQL(s *Store) string    { return s.sql.claim }
func CompleteSQL(s *Store) string { return s.sql.complete }

var (
	EncodeHeader = func(h http.Header) []byte { return encodeHeader(nil, h) }
	DecodeHeader = decodeHeader
)
