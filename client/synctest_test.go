package client_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/client"
)

// TestSenderInSynctestBubble holds the package doc's advice to tests: a
// sender on its real clock, in a testing/synctest bubble with a
// RoundTripper of its own, waits its backoff on the bubble's fake time,
// so a delivery that retries takes no real time.
func TestSenderInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 503}, {status: 503}, {status: 201}}}
		s := newSender(t, tr, client.Config{Backoff: client.Backoff{Strategy: client.Exponential, Base: time.Minute, Cap: time.Minute}})
		start := time.Now()
		res, err := s.Deliver(context.Background(), delivery())
		if err != nil || res.Attempts != 3 || res.StatusCode != 201 {
			t.Fatalf("Deliver = %+v, %v; want 201 at the third attempt", res, err)
		}
		if waited := time.Since(start); waited != 2*time.Minute {
			t.Errorf("the bubble's clock moved %v, want the two backoffs of 1m", waited)
		}
	})
}
