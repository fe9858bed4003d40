package standardwebhooks

import (
	"net/http"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// The problem types a Verifier answers with, each stable across releases
// and, as every problem geoidem writes, under problem.TypeBase.
// A sender should not retry a 401 with the same headers: a missing or
// invalid signature will not fix itself, and a stale timestamp needs a
// fresh signature (see [Signer]). A timestamp ahead is the one refusal a
// sender retries as it is: a 503 with Retry-After.
const (
	// ProblemSignatureMissing (401): webhook-id, webhook-timestamp or
	// webhook-signature is missing or empty.
	ProblemSignatureMissing = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-signature-missing"
	// ProblemSignatureInvalid (401): no signature matches any secret, or
	// the headers are malformed (a timestamp that is not a Unix time, a
	// header sent twice, a webhook-id over 255 bytes or not printable
	// ASCII, no well-formed signature of a version the Verifier checks).
	ProblemSignatureInvalid = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-signature-invalid"
	// ProblemTimestampOutOfTolerance (401): webhook-timestamp is further
	// in the past than the tolerance. It never comes back within it: the
	// sender must sign again with a fresh timestamp.
	ProblemTimestampOutOfTolerance = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-timestamp-out-of-tolerance"
	// ProblemTimestampAhead (503, with Retry-After): the request is
	// authentic, but webhook-timestamp is further ahead of the receiver's
	// clock than the tolerance. It is a refusal of the clocks', not of the
	// request's: the same request verifies once the receiver's clock has
	// caught up, which Retry-After says, and nothing was claimed.
	ProblemTimestampAhead = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-timestamp-ahead"
	// ProblemQueryNotSigned (400): the request URL carries a query, which
	// no Standard Webhooks signature covers, and the Verifier does not
	// allow one (VerifierConfig.AllowQuery). The sender should deliver to
	// the URL without the query.
	ProblemQueryNotSigned = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-query-not-signed"
)

// The body problems share their types with the geoidem middleware's
// (middleware.ProblemBodyTooLarge and middleware.ProblemBodyUnreadable).
const (
	problemBodyTooLarge   = problem.TypeBase + "body-too-large"  // 413
	problemBodyUnreadable = problem.TypeBase + "body-unreadable" // 408
)

// writeProblem answers with an RFC 9457 problem document, not to be
// cached, with Retry-After when retryAfter is positive.
func writeProblem(w http.ResponseWriter, status int, typ, title, detail string, retryAfter time.Duration) {
	if status == http.StatusUnauthorized {
		// RFC 9110 §15.5.2: a 401 carries a challenge. Standard Webhooks
		// has no registered scheme; this one names what is expected.
		w.Header().Set("WWW-Authenticate", "Webhook-Signature")
	}
	problem.Write(w, problem.Details{Type: typ, Title: title, Status: status, Detail: detail, RetryAfter: retryAfter})
}

// unreadableRetryAfter is the Retry-After of a body the verifier failed to
// read: the transport's fault, which a prompt retry may not meet again.
const unreadableRetryAfter = time.Second
