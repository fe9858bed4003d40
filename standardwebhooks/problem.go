package standardwebhooks

import (
	"encoding/json"
	"net/http"
)

// problemTypeBase is the prefix of every geoidem problem type URI; it is
// the same as middleware.ProblemTypeBase, repeated here because this
// package imports only the standard library.
const problemTypeBase = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#"

// The problem types a Verifier answers with, each stable across releases
// and under the same base URI as the middleware's (middleware.ProblemTypeBase).
// A sender should not retry a 401 with the same headers: a missing or
// invalid signature will not fix itself, and a timestamp out of tolerance
// needs a fresh signature (see [Signer]).
const (
	// ProblemSignatureMissing (401): webhook-id, webhook-timestamp or
	// webhook-signature is missing or empty.
	ProblemSignatureMissing = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-signature-missing"
	// ProblemSignatureInvalid (401): no signature matches any secret, or
	// the headers are malformed (a timestamp that is not a Unix time, an id
	// with a full stop, a header sent twice).
	ProblemSignatureInvalid = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-signature-invalid"
	// ProblemTimestampOutOfTolerance (401): webhook-timestamp is further
	// from the receiver's clock than the tolerance, in the past or the
	// future.
	ProblemTimestampOutOfTolerance = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-timestamp-out-of-tolerance"
)

// The body problems share their types with the geoidem middleware's
// (middleware.ProblemBodyTooLarge and middleware.ProblemBodyUnreadable).
const (
	problemBodyTooLarge   = problemTypeBase + "body-too-large"  // 413
	problemBodyUnreadable = problemTypeBase + "body-unreadable" // 400
)

type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// writeProblem answers with an RFC 9457 problem document, not to be cached.
func writeProblem(w http.ResponseWriter, status int, typ, title, detail string) {
	body, _ := json.Marshal(problem{Type: typ, Title: title, Status: status, Detail: detail}) // cannot fail
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if status == http.StatusUnauthorized {
		// RFC 9110 §15.5.2: a 401 carries a challenge. Standard Webhooks
		// has no registered scheme; this one names what is expected.
		h.Set("WWW-Authenticate", "Webhook-Signature")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
