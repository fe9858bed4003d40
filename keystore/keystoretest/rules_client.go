package keystoretest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// The rules of the optional keystore.ClientBounded capability. A store
// without it, or configured without a bound, skips them, visibly. Each
// rule first contends the store (see contend), so that a store which
// holds its clients to the bound only under contention (memstore) is held
// to the same rules as one that holds them to it at all times.

func clientBound(t *testing.T, s keystore.Store) keystore.ClientBound {
	t.Helper()
	cb, ok := s.(keystore.ClientBounded)
	if !ok {
		t.Skipf("%T is not a keystore.ClientBounded", s)
	}
	b := cb.ClientBound()
	if b.Keys <= 0 {
		t.Skipf("%T holds no client to a bound, as configured", s)
	}
	if b.Window <= 0 {
		t.Fatalf("ClientBound() = %+v: a bound must have a positive Window", b)
	}
	if b.Keys > 1000 {
		t.Skipf("ClientBound() = %+v: a bound of more than 1000 keys takes too long to reach here; configure a smaller one for the conformance run", b)
	}
	return b
}

// maxFill is the most new keys contend claims for its filler.
const maxFill = 1 << 20

// contend brings s to where it holds its clients to b, and fails t if it
// cannot: a filler client claims new keys, in flight for the rest of the
// rule, each with the reservation of a small record
// (keystore.ClaimArgs.RecordBytes), until the store refuses it as a
// client past its bound. A store that holds every client to its bound at
// all times (redisstore, pgstore) refuses the filler's key b.Keys+1; one
// that holds them to it only under contention (memstore, while it holds
// less free room than its headroom) first admits every key the filler
// claims while it has room to spare, then b.Keys more. A store that fills
// before it refuses the filler is too small for its bound, and fails t.
func contend(t *testing.T, s keystore.Store, b keystore.ClientBound) {
	t.Helper()
	filler := "filler-" + Key(t)[:12]
	for i := range maxFill {
		c, err := s.Claim(ctx(t), Key(t), keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: keystore.NewToken(), Client: filler, RecordBytes: 64})
		var fe *keystore.FullError
		switch {
		case errors.As(err, &fe) && fe.Client:
			wantClientRefusal(t, b, claimed{Claim: c}, err, fmt.Sprintf("the filler's new key %d", i+1))
			if i < b.Keys {
				t.Fatalf("the filler's new key %d refused, within the bound of %d: %v", i+1, b.Keys, err)
			}
			return
		case err != nil || !c.Acquired:
			t.Fatalf("the filler's new key %d: acquired %v, err %v; want it acquired, or refused as a client past its bound (a store that fills before then is too small for its ClientBound %+v: configure a larger store or a smaller bound for the conformance run)", i+1, c.Acquired, err, b)
		}
	}
	t.Fatalf("the filler acquired %d new keys and was never refused; want it refused past its bound %+v", maxFill, b)
}

// claimFor claims key for client with a fresh token.
func claimFor(t *testing.T, s keystore.Store, key, client string) (claimed, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(ctx(t), key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok, Client: client})
	r := claimed{Claim: c}
	if err == nil && c.Acquired {
		r.Token = tok
	}
	return r, err
}

// mustAcquireFor claims a new key for client and fails t unless it is
// acquired.
func mustAcquireFor(t *testing.T, s keystore.Store, client, what string) (string, claimed) {
	t.Helper()
	key := Key(t)
	c, err := claimFor(t, s, key, client)
	if err != nil || !c.Acquired {
		t.Fatalf("%s: Claim of a new key for %q: acquired %v, err %v; want it acquired", what, client, c.Acquired, err)
	}
	return key, c
}

// wantClientRefusal fails t unless err is the refusal of a client past
// its bound.
func wantClientRefusal(t *testing.T, b keystore.ClientBound, c claimed, err error, what string) {
	t.Helper()
	var fe *keystore.FullError
	switch {
	case c.Acquired:
		t.Fatalf("%s: acquired; want a *keystore.FullError with Client set", what)
	case !errors.As(err, &fe) || !errors.Is(err, keystore.ErrStoreFull):
		t.Fatalf("%s: err = %v; want a *keystore.FullError (an ErrStoreFull) with Client set", what, err)
	case !fe.Client:
		t.Fatalf("%s: %v: Client is not set; the store is not full, the client is past its bound", what, err)
	case fe.RetryAfter <= 0 || fe.RetryAfter > b.Window+time.Second:
		t.Fatalf("%s: RetryAfter %v; want it in (0, Window %v]", what, fe.RetryAfter, b.Window)
	}
}

// A client that has acquired Keys new keys is refused the next with a
// FullError whose Client is set; the claim acquires nothing (another
// client then acquires that very key), and no other client, nor a claim
// without a client, is refused for it.
func testClientBoundRefusesPastBound(t *testing.T, s keystore.Store) {
	b := clientBound(t, s)
	contend(t, s, b)
	client, other := "client-"+Key(t)[:12], "client-"+Key(t)[:12]
	for i := range b.Keys {
		key, c := mustAcquireFor(t, s, client, fmt.Sprintf("new key %d of %d", i+1, b.Keys))
		if i%2 == 0 {
			if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
				t.Fatalf("Complete: %v", err)
			}
		}
	}
	key := Key(t)
	c, err := claimFor(t, s, key, client)
	wantClientRefusal(t, b, c, err, fmt.Sprintf("new key %d, past the bound of %d", b.Keys+1, b.Keys))
	if c, err := claimFor(t, s, key, other); err != nil || !c.Acquired {
		t.Fatalf("the refused key, claimed for another client: acquired %v, err %v; want it acquired (the refusal claimed nothing, and the bound is per client)", c.Acquired, err)
	}
	for i := 1; i < b.Keys; i++ {
		mustAcquireFor(t, s, other, fmt.Sprintf("another client's new key %d of %d, after the first was refused", i+1, b.Keys))
	}
	mustClaim(t, s, Key(t), fpA, longLease, acquire) // a claim without a client
}

// What is not a new key never counts, and is never refused: a replay of
// the client's record, a report of its key in flight, the holder's
// repeated Claim, the re-acquisition of a key it released.
func testClientBoundCountsOnlyNewKeys(t *testing.T, s keystore.Store) {
	b := clientBound(t, s)
	contend(t, s, b)
	client := "client-" + Key(t)[:12]
	done, c := mustAcquireFor(t, s, client, "first new key")
	if err := s.Complete(ctx(t), done, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	repeat := func(when string) {
		t.Helper()
		for range b.Keys + 2 {
			r, err := claimFor(t, s, done, client)
			if err != nil || r.State != keystore.Completed {
				t.Fatalf("%s: the client's replay: state %v, err %v; want its record", when, r.State, err)
			}
		}
	}
	repeat("under the bound")
	counted := 1
	if b.Keys >= 2 {
		held, h := mustAcquireFor(t, s, client, "second new key")
		counted++
		for range b.Keys + 2 {
			r, err := claimFor(t, s, held, client)
			if err != nil || r.Acquired || r.State != keystore.InFlight {
				t.Fatalf("the client's duplicate of its key in flight: acquired %v, state %v, err %v; want it reported in flight", r.Acquired, r.State, err)
			}
			r2, err := s.Claim(ctx(t), held, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: h.Token, Client: client})
			if err != nil || !r2.Acquired {
				t.Fatalf("the holder's repeated Claim: acquired %v, err %v; want it acquired", r2.Acquired, err)
			}
		}
		// Released and claimed again: the key is not new.
		for range b.Keys + 2 {
			if err := s.Release(ctx(t), held, h.Token); err != nil {
				t.Fatalf("Release: %v", err)
			}
			var err error
			if h, err = claimFor(t, s, held, client); err != nil || !h.Acquired {
				t.Fatalf("the client's claim of a key it released: acquired %v, err %v; want it acquired, not counted", h.Acquired, err)
			}
		}
	}
	for i := counted; i < b.Keys; i++ {
		mustAcquireFor(t, s, client, fmt.Sprintf("new key %d of %d, after %d replays and repeats that must not count", i+1, b.Keys, b.Keys+2))
	}
	c, err := claimFor(t, s, Key(t), client)
	wantClientRefusal(t, b, c, err, fmt.Sprintf("new key %d, past the bound of %d", b.Keys+1, b.Keys))
	repeat("past the bound")
}

// FillClients is the store fill of many clients, for a store's own tests
// of what a refusal leaves behind: clients clients ("198.51.100.1", …)
// each claim new keys until they have acquired the store's
// ClientBound().Keys and been refused extra more, and t fails unless every
// claim up to the bound acquired its key and every one past it was refused
// as a client past its bound; then a client that has claimed nothing
// acquires a key. It returns the refused keys, which the store must hold
// no entry of. It skips t, as the ClientBounded rules do, on a store
// without a bound. Unlike those rules, it does not contend the store
// first: give it one that holds its clients to their bound already (a
// memstore contended by the test's own keys).
func FillClients(t *testing.T, s keystore.Store, clients, extra int) (refused []string) {
	t.Helper()
	b := clientBound(t, s)
	for a := range clients {
		client := fmt.Sprint("198.51.100.", a+1)
		for i := range b.Keys + extra {
			key := Key(t)
			c, err := claimFor(t, s, key, client)
			if i < b.Keys {
				if err != nil || !c.Acquired {
					t.Fatalf("%s's new key %d of its bound of %d: acquired %v, err %v; want it acquired", client, i+1, b.Keys, c.Acquired, err)
				}
				continue
			}
			what := fmt.Sprintf("%s's new key %d, past its bound of %d", client, i+1, b.Keys)
			wantClientRefusal(t, b, c, err, what)
			if fe := new(keystore.FullError); errors.As(err, &fe) && fe.RetryAfter > b.Window {
				t.Fatalf("%s: RetryAfter %v; want it within the Window %v", what, fe.RetryAfter, b.Window)
			}
			refused = append(refused, key)
		}
	}
	mustAcquireFor(t, s, "203.0.113.9", fmt.Sprintf("a client that claimed nothing, after %d clients each reached their bound", clients))
	return refused
}
