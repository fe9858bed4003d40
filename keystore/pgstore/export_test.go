package pgstore

import "net/http"

// Internals for the tests and for the hand-written baseline in the
// benchmarks.

func ClaimSQL(s *Store) string { return s.sql.claim }

// CompleteSQL is the statement of a first completion, the one the
// benchmarks' hand-written baselines send.
func CompleteSQL(s *Store) string { return s.sql.completeHeld }

var (
	EncodeHeader = func(h http.Header) []byte { return encodeHeader(nil, h) }
	DecodeHeader = decodeHeader
)

// ClaimsWaiting returns the number of claims waiting for a batch
// statement.
func ClaimsWaiting(s *Store) int {
	s.claims.mu.Lock()
	defer s.claims.mu.Unlock()
	return len(s.claims.waiting)
}

// StatementKinds names the store's statements, by their SQL, for a
// pgx.QueryTracer that reports what each call ran.
func StatementKinds(s *Store) map[string]string {
	q := s.sql
	return map[string]string{
		q.fastClaim: "claim", q.batchClaim: "claim (batch)", q.claim: "claim (second statement)",
		q.extend: "extend", q.completeHeld: "complete (held)", q.complete: "complete", q.batchComplete: "complete (batch)", q.release: "release",
	}
}

// HotKeyClaims is how many claims of one key may be in flight before its
// further claims wait.
const HotKeyClaims = hotKeyClaims

// SetBatchClaimSQL makes s send batch and counted for its batches of
// claims, unbounded and bounded, in place of its own statements.
func SetBatchClaimSQL(s *Store, batch, counted string) {
	s.sql.batchClaim, s.sql.batchClaimCounted = batch, counted
}

// SetBatchCompleteSQL makes s send sql for its batches of completions.
func SetBatchCompleteSQL(s *Store, sql string) { s.sql.batchComplete = sql }
