package client

import (
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
)

// Header names the sender reads and writes.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	headerRetryAfter     = "Retry-After"
)

// EncodeKey returns the Idempotency-Key header value for key: the key
// itself when every byte is an RFC 9110 token character or one of ":" and
// "/" (UUIDs, hex digests and most generated keys), else the key as an
// RFC 9651 sf-string (in double quotes, with `"` and `\` escaped). The
// geoidem middleware accepts both forms and recovers the same key. It
// returns an error wrapping [ErrInvalidDelivery] for an empty key and for
// one with a byte outside printable ASCII.
func EncodeKey(key string) (string, error) {
	if key == "" {
		return "", errNoKey
	}
	bare := true
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x20 || c > 0x7e {
			return "", errInvalidKey
		}
		if !isTokenByte(c) {
			bare = false
		}
	}
	if bare {
		return key, nil
	}
	var b strings.Builder
	b.Grow(len(key) + 2)
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String(), nil
}

// isTokenByte reports whether c may appear in a bare key: an RFC 9110
// tchar, ':' or '/'.
func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}

// ParseRetryAfter interprets a Retry-After header value: delta-seconds, or
// an HTTP-date in any of the three forms of RFC 9110 (IMF-fixdate, RFC 850,
// asctime). A date is turned into a delay relative to date, the response's
// Date header, when that parses (so a skewed server clock cancels out), and
// to now otherwise; a date in the past gives 0. ok is false when the value
// is absent or malformed: then the geoidem middleware records a 409 that
// carries it, and the sender does not retry it. The result is not clamped.
func ParseRetryAfter(value, date string, now time.Time) (d time.Duration, ok bool) {
	return answer.ParseRetryAfter(value, date, now)
}
