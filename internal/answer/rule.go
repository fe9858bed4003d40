package answer

import (
	"net/http"
	"strconv"
	"strings"
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

// maxDelta bounds delta-seconds so that the conversion to a Duration cannot
// overflow.
const maxDelta = int64(1<<63-1) / int64(time.Second)

// ParseRetryAfter interprets a Retry-After header value: delta-seconds, or
// an HTTP-date in any of the three forms of RFC 9110 (IMF-fixdate, RFC 850,
// asctime). A date is turned into a delay relative to date, the response's
// Date header, when that parses (so a skewed server clock cancels out), and
// to now otherwise; a date in the past gives 0. ok is false when the value
// is absent or malformed; whether it is does not depend on date or now.
// The result is not clamped.
func ParseRetryAfter(value, date string, now time.Time) (d time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if isDigits(value) {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n > maxDelta { // only overflow: the value is all digits
			n = maxDelta
		}
		return time.Duration(n) * time.Second, true
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	ref := now
	if date != "" {
		if t, err := http.ParseTime(date); err == nil {
			ref = t
		}
	}
	d = at.Sub(ref)
	if d < 0 {
		d = 0
	}
	return d, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
