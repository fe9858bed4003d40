package answer

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfterSeconds is d as the delta-seconds of a Retry-After header: in
// whole seconds, rounded up (a sender told to come back before the
// condition ends meets it again), 0 for a d of zero or less. The longest
// Duration gives 9223372037: the rounding never overflows. Every
// Retry-After and every message saying when to come back is written with
// it.
func RetryAfterSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	secs := int64(d / time.Second)
	if d%time.Second != 0 {
		secs++
	}
	return secs
}

// FormatRetryAfter is RetryAfterSeconds(d) as a header value: "" for a d
// of zero or less, when no Retry-After is to be sent.
func FormatRetryAfter(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(RetryAfterSeconds(d), 10)
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
