package keystoretest

import (
	"context"
	"errors"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

// The rule of the optional capability keystore.Pinger, for the stores
// that have it. A store without it skips the rule, visibly.

// Ping answers a reachable store with nil, touching no key, and honours
// its context: a canceled one fails with an error wrapping context.Canceled.
func testPinger(t *testing.T, s keystore.Store) {
	p, ok := s.(keystore.Pinger)
	if !ok {
		t.Skipf("%T is not a keystore.Pinger", s)
	}
	key := Key(t)
	mustClaim(t, s, key, fpA, longLease, acquire)
	if err := p.Ping(ctx(t)); err != nil {
		t.Fatalf("Ping of a working store: %v", err)
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Ping(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Ping with a canceled context: %v, want an error wrapping context.Canceled", err)
	}
	mustClaim(t, s, key, fpB, longLease, keystore.InFlight) // Ping changed nothing
}
