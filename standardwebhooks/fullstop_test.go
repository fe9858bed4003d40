package standardwebhooks_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// TestVerifyAcceptsIDWithFullStop: the specification asks only that the
// receiver verify the signature of "id.timestamp.body" with the id sent; it
// puts no rule on the id's characters, so a sender (another
// implementation, say) may sign an id with a full stop, and the receiver
// must take it.
func TestVerifyAcceptsIDWithFullStop(t *testing.T) {
	for _, id := range []string{"msg.1", "evt_2024.06.01.42", ".", "a..b"} {
		f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
		w := f.serve(f.signed(id, body))
		if w.Code != http.StatusAccepted || f.next.calls != 1 {
			t.Errorf("webhook-id %q, correctly signed: status %d, next ran %d times; want 202 and once; body %s", id, w.Code, f.next.calls, strings.TrimSpace(w.Body.String()))
		}
	}
}
