package answer

import (
	"net/http"
	"time"
)

// RetryStatus reports whether a sender retries an answer with status,
// given whether it carries a Retry-After the sender can read
// (ParseRetryAfter): every 5xx (a failure of the receiver's, never an
// outcome to keep, whatever its code: 501 and 507 included, which an
// operator's deploy or cleanup fixes), 408, 429, and 409 with a readable
// Retry-After (the middleware's "still running", a handler's "conflict,
// come back then"). Every other status is final.
func RetryStatus(status int, retryAfter bool) bool {
	switch {
	case status >= 500 && status <= 599,
		status == http.StatusRequestTimeout,
		status == http.StatusTooManyRequests:
		return true
	case status == http.StatusConflict:
		return retryAfter
	}
	return false
}

// Retried reports whether a sender retries an answer with status and the
// Retry-After header value retryAfter ("" when there is none): RetryStatus
// with the value's validity. It is the middleware's release rule: what a
// sender retries must be released, so that the retry runs again, and what
// it does not retry must be recorded, so that a retry is replayed the
// answer rather than running the handler again.
func Retried(status int, retryAfter string) bool {
	_, ok := ParseRetryAfter(retryAfter, "", time.Time{})
	return RetryStatus(status, ok)
}
