package answer

// Key is what an answer leaves of its request's idempotency key.
type Key uint8

const (
	// NotClaimed: the request claimed nothing (it was answered before its
	// claim, or its claim found the key held): a retry starts afresh.
	NotClaimed Key = iota
	// Released: the request claimed the key and gave it up, so that a
	// retry runs the handler again.
	Released
	// Refused: the request claimed the key and gave it up without a
	// record, but the answer depends on the request's bytes alone (a
	// validator's): the same bytes get the same answer again. Kept, a small
	// body could fill the store with a large answer for the whole
	// retention.
	Refused
	// Recorded: the answer is recorded and replayed to every retry for the
	// retention.
	Recorded
	// AsLeft: a transport error; the key is as the attempt left it (see
	// the row), and a retry is answered accordingly.
	AsLeft
	// Held: the outcome is unknown (the work may have been done), so the
	// key is neither released nor recorded for the retention: every retry
	// gets the same answer until an operator releases the key or the hold
	// ends, and a retry after that runs again.
	Held
)

// String names k as the page does.
func (k Key) String() string {
	return [...]string{NotClaimed: "not claimed", Released: "released", Refused: "released (same bytes, same answer)",
		Recorded: "recorded", AsLeft: "as the attempt left it", Held: "held until released"}[k]
}

// AnyStatus is the Status of a row that stands for every status of its
// class (the handler's), or for the original status (response-not-recorded).
const AnyStatus = 0

// Row is one answer: who gives it, its status and problem type, what it
// leaves of the key, where its Retry-After comes from, and what the paired
// sender does.
type Row struct {
	// Status is the answer's status; AnyStatus for the rows that stand for
	// several.
	Status int
	// Problem is the problem type's name (the fragment after
	// problem.TypeBase, listed in docs/problems.md); "" for a handler's
	// answer of any type, or a transport error.
	Problem string
	// Transport names a transport error for a row that is one; "" for an
	// answer.
	Transport string
	// By is who gives it.
	By string
	// When says in what case.
	When string
	// Key is what it leaves of the key.
	Key Key
	// RetryAfter says where its Retry-After comes from; "" when it has
	// none.
	RetryAfter string
	// Retry is whether the paired sender retries it, with the same key and
	// the same bytes: [RetryStatus] of Status with RetryAfter != "", or
	// [TransportRetried] of the error.
	Retry bool
	// Do is what a sender does with it.
	Do string
}

// Who gives an answer.
const (
	byMiddleware = "middleware"
	byAdmission  = "frontdoor (Door)"
	byFrontdoor  = "frontdoor (Door, BodyRate)"
	byVerifier   = "standardwebhooks"
	byValidator  = "geojson (RequestValidator)"
	byHandler    = "handler"
	byIngest     = "examples/ingest"
	byProxy      = "geoidem proxy"
	byTransport  = "transport"
)

// What a sender does.
const (
	doAtRetryAfter = "retry at Retry-After, same key, same bytes"
	doBackoff      = "retry after a backoff (Retry-After when given), same key, same bytes"
	doReconnect    = "retry after a backoff, same key, same bytes"
	doDone         = "done: it was executed; do not send it again"
	doFix          = "stop: no retry of these bytes can succeed; fix the request (under a new key if this answer was recorded)"
)

// Table is every answer the middleware, the front door, the
// signature verifier, the GeoJSON validator, a handler and examples/ingest
// can give a covered request, and every transport error between them and
// their sender, HTTP/1.1 and HTTP/2 alike.
var Table = []Row{
	// The middleware, before the claim.
	{400, "missing-key", "", byMiddleware, "the request carries no Idempotency-Key", NotClaimed, "", false, doFix},
	{400, "malformed-key", "", byMiddleware, "the key is malformed, or sent twice", NotClaimed, "", false, doFix},
	{413, "body-too-large", "", byMiddleware, "the body exceeds Config.MaxBodyBytes (or a MaxBytesReader in front)", NotClaimed, "", false, doFix},
	{408, "body-unreadable", "", byMiddleware, "the body could not be read in full: the server's ReadTimeout cut a stalled upload, the connection or stream was reset mid-upload", NotClaimed,
		"Config.RetryAfter", true, doAtRetryAfter},
	{400, "invalid-headers", "", byMiddleware, "the validator's header check (HeaderChecker) refused the headers", NotClaimed, "", false, doFix},
	{415, "unsupported-media-type", "", byValidator, "the Content-Type is neither application/geo+json nor application/json (the header check)", NotClaimed, "", false, doFix},
	// The middleware, at the claim.
	{503, "store-unavailable", "", byMiddleware, "the key store failed or timed out, or the request was canceled while its claim was in flight; a claim whose outcome is unknown is released by its token", NotClaimed,
		"Config.RetryAfter", true, doAtRetryAfter},
	{503, "store-full", "", byMiddleware, "the key store has no room for a new key", NotClaimed,
		"when the store says room frees (keystore.FullError), at least Config.RetryAfter", true, doAtRetryAfter},
	{429, "client-full", "", byMiddleware, "this client is past its bound in the key store", NotClaimed,
		"when the store says the client may claim again (keystore.FullError), at least Config.RetryAfter", true, doAtRetryAfter},
	{409, "request-in-flight", "", byMiddleware, "a request with this key and payload is still running", NotClaimed,
		"the holder's remaining lease, at most Lease/6, at least Config.RetryAfter", true, doAtRetryAfter},
	{422, "key-reused", "", byMiddleware, "the key was first used with another payload", NotClaimed, "", false,
		"stop: the key holds another payload (a paired Outbox reports it as sent earlier)"},
	// The middleware, after the handler.
	{AnyStatus, "response-not-recorded", "", byMiddleware, "the request ran, but its response was too large to record, or the handler panicked after sending a final status", Recorded, "", false, doDone},
	{500, "response-not-recorded", "", byMiddleware, "a replay whose record holds a status outside 200-599 (a corrupt record)", Recorded, "", true,
		"retried; the record answers the same until its retention ends, so the delivery is dead-lettered as exhausted"},
	{422, "response-not-replayable", "", byMiddleware, "the request ran, but switched protocols (101) or hijacked the connection", Recorded, "", false, doDone},
	// The front door's admission, in front of the middleware.
	{503, "server-busy", "", byAdmission, "the server has as many requests or bytes in flight as it takes (the Door: still so after waiting up to Config.Wait)", NotClaimed,
		"when room is expected to free: the first work slot's expected end, or the first arriving body's deadline", true, doAtRetryAfter},
	{429, "client-busy", "", byAdmission, "this client holds its share of the requests or bytes in flight while another client holds some", NotClaimed,
		"when room is expected to free: the first work slot's expected end, or the first arriving body's deadline", true, doAtRetryAfter},
	// The front door.
	{408, "body-too-slow", "", byFrontdoor, "the body fell behind the minimum rate, or was cut to make room for another client", NotClaimed,
		"the body rate's grace, rounded up", true, doAtRetryAfter},
	// The signature verifier, in front of the middleware.
	{401, "webhook-signature-missing", "", byVerifier, "a signature header is missing", NotClaimed, "", false, doFix},
	{401, "webhook-signature-invalid", "", byVerifier, "no signature matches an accepted secret", NotClaimed, "", false, doFix},
	{401, "webhook-timestamp-out-of-tolerance", "", byVerifier, "the signed timestamp is more than the tolerance in the past: it never comes back within it", NotClaimed, "", false,
		"stop: re-sign with a fresh timestamp and send again"},
	{503, "webhook-timestamp-ahead", "", byVerifier, "the signature verifies, but the signed timestamp is more than the tolerance ahead of the receiver's clock", NotClaimed,
		"when the timestamp will be within the tolerance: the timestamp minus the tolerance, from now", true,
		doAtRetryAfter + "; a sender that re-signs each attempt on a clock that runs ahead is refused again until its clock is set right"},
	{400, "webhook-query-not-signed", "", byVerifier, "the URL carries a query no signature covers", NotClaimed, "", false, doFix},
	// The GeoJSON validator, behind the middleware.
	{422, "invalid-request", "", byMiddleware, "the configured validator refused the body", Refused, "", false, doFix},
	{422, "invalid-geojson", "", byValidator, "the body is JSON but not valid RFC 7946 GeoJSON", Refused, "", false, doFix},
	{400, "malformed-json", "", byValidator, "the body is not (I-)JSON", Refused, "", false, doFix},
	// A handler's own answers, behind the middleware.
	{AnyStatus, "", "", byHandler, "any 2xx (and any status not listed below)", Recorded, "", false, doDone},
	{AnyStatus, "", "", byHandler, "any 5xx (501 and 507 included)", Released, "the handler's, if it sets one", true, doBackoff},
	{408, "", "", byHandler, "408", Released, "the handler's, if it sets one", true, doBackoff},
	{429, "", "", byHandler, "429", Released, "the handler's, if it sets one", true, doBackoff},
	{409, "", "", byHandler, "409 with a Retry-After a sender can read (delta-seconds or an HTTP-date)", Released, "the handler's", true, doAtRetryAfter},
	{409, "", "", byHandler, "409 without a Retry-After, or with one no sender can read", Recorded, "", false, "stop: a conflict no retry fixes"},
	{AnyStatus, "", "", byHandler, "any other 4xx", Recorded, "", false, doFix},
	{AnyStatus, "", "", byHandler, "panicked before its final status", Released, "", true,
		"the connection (HTTP/1.1) or the stream (HTTP/2) is reset: a transport error, retried"},
	// examples/ingest's handler.
	{422, "feature-id-missing", "", byIngest, "a feature has no id", Recorded, "", false, doFix},
	{422, "not-features", "", byIngest, "the body is a bare geometry", Recorded, "", false, doFix},
	{422, "observation-time-invalid", "", byIngest, "an observation time is not an RFC 3339 date-time, or is given twice", Recorded, "", false, doFix},
	{503, "observation-time-ahead", "", byIngest, "an observation time is further ahead of the receiver's clock than the allowed skew", Released,
		"when the receiver's clock will have caught up: the latest time minus the skew, from now", true, doAtRetryAfter},
	{422, "feature-rejected", "", byIngest, "the feature store refused the features for their own fault: a value of theirs it can never take", Recorded, "", false, doFix},
	{409, "feature-conflict", "", byIngest, "the feature store refused the features for the state of other rows (a foreign key to a row not there yet, a unique or exclusion constraint another row holds), which another write can lift", Released,
		"service.Config.RetryAfter (the middleware's, 1 s by default): nothing says when the other write comes", true,
		doAtRetryAfter + "; dead-lettered as retryable if the conflict stays, then re-driven"},
	{503, "feature-store-unavailable", "", byIngest, "the feature store failed (for any reason not known to be the features' fault)", Released,
		"service.Config.RetryAfter (the middleware's, 1 s by default)", true, doAtRetryAfter},
	{507, "feature-store-full", "", byIngest, "the in-memory feature store is at its bound; nothing frees room by itself", Released, "", true,
		"retry after a backoff; dead-lettered as exhausted if no operator makes room, then re-driven"},
	{404, "feature-not-found", "", byIngest, "GET /features/{id} of an unknown id (not covered by the middleware)", NotClaimed, "", false, "stop"},
	{404, "not-found", "", byIngest, "no route has this path", NotClaimed, "", false, doFix},
	{405, "method-not-allowed", "", byIngest, "the path does not take this method", NotClaimed, "", false, doFix},
	{503, "upstream-unreachable", "", byProxy, "the receiver behind the proxy could not be reached: nothing of the request was sent to it", Released,
		"middleware.DefaultRetryAfter (1 s)", true, doAtRetryAfter},
	{503, "upstream-uncertain", "", byProxy, "the request reached the receiver behind the proxy, which gave no answer to trust (a reset, a timeout, a 502 or 504 of its own proxy): it may have done the work", Held,
		"the end of the hold (an HTTP-date), replayed until an operator releases the key; with -uncertain-hold 0 the key is released instead", true,
		"retry at Retry-After; the same answer until an operator has checked the receiver and released the key"},
	// Transport errors, HTTP/1.1 and HTTP/2, in either direction.
	{AnyStatus, "", "connection refused", byTransport, "nothing listens, or the server shut down", AsLeft, "", true, doReconnect},
	{AnyStatus, "", "connection reset, EOF", byTransport, "the connection ended before the answer: a handler that panicked or was cut (released), an answer lost after it was recorded (replayed to the retry), a cut upload (nothing claimed)", AsLeft, "", true, doReconnect},
	{AnyStatus, "", "stream reset (RST_STREAM)", byTransport, "HTTP/2: the stream ended before the answer, for the same reasons", AsLeft, "", true, doReconnect},
	{AnyStatus, "", "GOAWAY", byTransport, "HTTP/2: the server closed the connection under the request", AsLeft, "", true, doReconnect},
	{AnyStatus, "", "timeout", byTransport, "the attempt's timeout passed before the answer: the request may still run (a retry meets 409 request-in-flight, then the record)", AsLeft, "", true, doReconnect},
	{AnyStatus, "", "any other error", byTransport, "an error the sender does not know", AsLeft, "", true, doReconnect},
	{AnyStatus, "", "certificate or TLS failure", byTransport, "the server's certificate is not trusted, or the TLS handshake failed", NotClaimed, "", false, "stop: fix the trust or the TLS configuration"},
	{AnyStatus, "", "malformed request", byTransport, "net/http refuses to send the request (a header with a newline, say)", NotClaimed, "", false, doFix},
	{AnyStatus, "", "redirect refused", byTransport, "the client's redirect policy refused a redirect", NotClaimed, "", false, "stop: deliver to the final URL"},
}
