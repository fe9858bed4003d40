package keystore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// TestFullErrorSaysWhenRoomFrees: the message names the wait in whole
// seconds rounded up, the longest wait included (rounding it must not
// overflow into a negative number), and nothing when there is none.
func TestFullErrorSaysWhenRoomFrees(t *testing.T) {
	for _, c := range []struct {
		retryAfter time.Duration
		want       string
	}{
		{0, "keystore: store full"},
		{time.Millisecond, "keystore: store full; room frees in 1s"},
		{1500 * time.Millisecond, "keystore: store full; room frees in 2s"},
		{24 * time.Hour, "keystore: store full; room frees in 86400s"},
		{1<<63 - 1, "keystore: store full; room frees in 9223372037s"},
	} {
		e := &keystore.FullError{RetryAfter: c.retryAfter}
		if got := e.Error(); got != c.want {
			t.Errorf("RetryAfter %v: %q, want %q", c.retryAfter, got, c.want)
		}
		if !errors.Is(e, keystore.ErrStoreFull) {
			t.Errorf("RetryAfter %v: not ErrStoreFull", c.retryAfter)
		}
	}
	if got := (&keystore.FullError{Client: true, RetryAfter: time.Second}).Error(); got != "keystore: the client is past its bound on new keys; room frees in 1s" {
		t.Errorf("a client's FullError reads %q", got)
	}
}
