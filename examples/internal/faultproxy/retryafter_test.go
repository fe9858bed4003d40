package faultproxy

import (
	"testing"
	"time"
)

// TestRetryAfterLongest: the delta-seconds of the longest RetryAfter is
// rounded up without overflowing into a negative value.
func TestRetryAfterLongest(t *testing.T) {
	s, err := newSettings(Config{RetryAfter: 1<<63 - 1, RetryAfterForm: RetryAfterSeconds})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.retryAfter(false); got != "9223372037" {
		t.Errorf("Retry-After %q, want 9223372037", got)
	}
	s, err = newSettings(Config{RetryAfter: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.retryAfter(false); got != "2" {
		t.Errorf("Retry-After %q, want 2", got)
	}
}
