package client

import (
	"net/http"
	"strings"

	"github.com/geoidem/geoidem/internal/answer"
)

// RetryableStatus reports whether the sender retries an answer with this
// status: every 5xx, 408 and 429, and 409 when it carries a valid
// Retry-After header (hasRetryAfter), which is how the geoidem middleware
// says "the original request with this key is still running, come back
// later". Every other status is permanent. It is the middleware's release
// rule too (one table, docs/answers.md): every answer it retries is one
// the middleware releases, so that the retry can run the handler again,
// and every answer it gives up on is one the middleware records.
func RetryableStatus(code int, hasRetryAfter bool) bool {
	return answer.RetryStatus(code, hasRetryAfter)
}

// retryableError reports whether a transport error is one a retry may
// fix: every error but the known permanent ones (certificate and TLS
// failures, a request net/http refuses to send, a redirect the client's
// policy refused). A stream reset, a GOAWAY, an error nobody classified are
// retried: the receiver answers the retry from its record if the attempt
// ran. The caller has already ruled out the delivery's own context ending.
func retryableError(err error) bool {
	return answer.TransportRetried(err)
}

// inFlight reports whether an attempt was answered 409 with Retry-After,
// the geoidem middleware's "another request with this key is running":
// with a delivery deadline, such an attempt is a wait for the key, not a
// failure, and is not counted against MaxAttempts. The receiver may hold a
// key in flight for its whole lease (a release that failed, a claim whose
// reply was lost), and a sender that counted those answers would
// dead-letter a delivery that the receiver would accept a moment later.
// The deadline bounds the waiting instead; without one, they count.
func (s *Sender) inFlight(p *pending, o outcome) bool {
	return o.status == http.StatusConflict && o.hasRetryAfter && !p.deadline.IsZero()
}

// problemKeyReused ends the type of the problem document the geoidem
// middleware answers (422) to a key first used with another payload
// (docs/problems.md#key-reused).
const problemKeyReused = "#key-reused"

// keyReused reports whether an attempt was answered 422 with the
// middleware's key-reused problem document.
func keyReused(o outcome) bool {
	return o.status == http.StatusUnprocessableEntity && o.problem != nil && strings.HasSuffix(o.problem.Type, problemKeyReused)
}
