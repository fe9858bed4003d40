package keystoretest

import (
	"context"
	"errors"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

// The rules of the optional capabilities keystore.Pinger and
// keystore.NonBlocking, for the stores that have them. A store without
// one skips its rule, visibly.

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

// A NonBlocking store vouches for itself (keystore.IsNonBlocking), so that
// callers may skip the timeouts around its calls; and, as every store, it
// refuses a done context without acting (the CanceledContext rule), which
// is what makes calling it under the request's own context safe.
func testNonBlocking(t *testing.T, s keystore.Store) {
	nb, ok := s.(keystore.NonBlocking)
	if !ok {
		t.Skipf("%T is not a keystore.NonBlocking", s)
	}
	if !keystore.IsNonBlocking(s) {
		t.Fatalf("%T.NonBlocking() returns %T, not the store itself: it vouches for another store", s, nb.NonBlocking())
	}
}
