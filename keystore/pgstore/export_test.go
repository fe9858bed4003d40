package pgstore

// Internals for the tests and for the hand-written baseline in the
// benchmarks.

func ClaimSQL(s *Store) string    { return s.sql.claim }
func CompleteSQL(s *Store) string { return s.sql.complete }

var (
	EncodeHeader = encodeHeader
	DecodeHeader = decodeHeader
)
