package middleware

import (
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/answer"
)

// TestRetryableIsTheRule checks that retryable, which skips the
// Retry-After of a status that is final whatever it says, answers as
// answer.Retried on every status, with and without a Retry-After, valid
// or not.
func TestRetryableIsTheRule(t *testing.T) {
	for status := 100; status <= 599; status++ {
		for _, ra := range []string{"", "5", "0", "-1", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"} {
			h := http.Header{}
			if ra != "" {
				h.Set("Retry-After", ra)
			}
			if got, want := retryable(status, h), answer.Retried(status, ra); got != want {
				t.Errorf("retryable(%d, Retry-After %q) = %v, answer.Retried says %v", status, ra, got, want)
			}
		}
	}
}
