package answer_test

import (
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
)

// TestRetryAfterSeconds: whole seconds rounded up, none for no wait, and
// the longest Duration without overflow; what is written reads back as a
// wait at least as long.
func TestRetryAfterSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		secs int64
		text string
	}{
		{-time.Second, 0, ""}, {0, 0, ""}, {1, 1, "1"}, {time.Millisecond, 1, "1"}, {time.Second, 1, "1"},
		{time.Second + 1, 2, "2"}, {1500 * time.Millisecond, 2, "2"}, {24 * time.Hour, 86400, "86400"},
		{1<<63 - 1, 9223372037, "9223372037"},
	} {
		if got := answer.RetryAfterSeconds(c.d); got != c.secs {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", c.d, got, c.secs)
		}
		got := answer.FormatRetryAfter(c.d)
		if got != c.text {
			t.Errorf("FormatRetryAfter(%v) = %q, want %q", c.d, got, c.text)
		}
		// The reader saturates at the longest whole-second Duration, just
		// short of the longest Duration.
		if back, ok := answer.ParseRetryAfter(got, "", time.Time{}); c.d > 0 && c.d < 1<<62 && (!ok || back < c.d) {
			t.Errorf("FormatRetryAfter(%v) = %q reads back as %v, %v", c.d, got, back, ok)
		}
	}
}
