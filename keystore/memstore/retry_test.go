package memstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// claimFor claims key for client with a fresh token.
func claimFor(s *memstore.Store, client, key string, lease time.Duration) (keystore.Claim, keystore.Token, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(context.Background(), key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok, Client: client})
	return c, tok, err
}

// fillPastShare has client "a" complete n records, kept for a day, while
// the store is not contended: past its share of 10 in a store of 100.
func fillPastShare(t *testing.T, s *memstore.Store, n int) {
	t.Helper()
	for i := range n {
		key := "a" + strconv.Itoa(i)
		_, tok, err := claimFor(s, "a", key, time.Minute)
		if err != nil {
			t.Fatalf("the lone client's key %d: %v", i+1, err)
		}
		if err := s.Complete(context.Background(), key, tok, record.Append(nil, record.Record{StatusCode: 201}), 24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
}

// A client past its share is refused only while the store is contended,
// and the refusal's RetryAfter says when the contention can end: here
// when another client's abandoned claims are dropped (their lease and its
// grace), not when the client's own records reach the end of their
// retention a day later. At that RetryAfter, the client claims again.
func TestShareRefusalRetryAfterIsTheContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 100, MaxClientEntries: 10, ClientBurst: 10})
		fillPastShare(t, s, 85)
		for i := range 10 { // another client's claims, abandoned: the store is contended
			if c, _, err := claimFor(s, "b", "b"+strconv.Itoa(i), 30*time.Second); err != nil || !c.Acquired {
				t.Fatalf("the other client's key %d: %v %v", i+1, c.State, err)
			}
		}
		_, _, err := claimFor(s, "a", "a-more", time.Minute)
		var fe *keystore.FullError
		if !errors.As(err, &fe) || !fe.Client {
			t.Fatalf("a new key of the client past its share, under contention: %v, want a client FullError", err)
		}
		// The other client's leases end at 30 s and are dropped a minute
		// later; nothing frees earlier.
		if fe.RetryAfter <= 0 || fe.RetryAfter > 90*time.Second {
			t.Fatalf("RetryAfter %v; want what frees the contention (the abandoned leases, dropped by 90s), not the client's records' retention (24h)", fe.RetryAfter)
		}
		time.Sleep(fe.RetryAfter)
		if c, _, err := claimFor(s, "a", "a-more", time.Minute); err != nil || !c.Acquired {
			t.Fatalf("the refused key at its RetryAfter, the contention over: %v %v, want acquired", c.State, err)
		}
	})
}

// Claims another client released (answered 5xx) are not held: the store
// drops them whenever it needs their room, so they never make it
// contended, and a client past its share is not refused for them.
func TestReleasedClaimsDoNotContend(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 100, MaxClientEntries: 10, ClientBurst: 10})
	fillPastShare(t, s, 85)
	for i := range 10 {
		key := "b" + strconv.Itoa(i)
		c, tok, err := claimFor(s, "b", key, 30*time.Second)
		if err != nil || !c.Acquired {
			t.Fatalf("the other client's key %d: %v %v", i+1, c.State, err)
		}
		if err := s.Release(context.Background(), key, tok); err != nil {
			t.Fatal(err)
		}
	}
	if c, _, err := claimFor(s, "a", "a-more", time.Minute); err != nil || !c.Acquired {
		t.Fatalf("a new key of the client with 85 of 100 held and 10 released: %v %v, want acquired (the store holds less than all but its headroom)", c.State, err)
	}
}

// The retry of a key its client released (a 5xx, released by the
// middleware) is never refused for the client's share: not even for a
// client past it under contention.
func TestRetryOfReleasedKeyPastShare(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 100, MaxClientEntries: 10, ClientBurst: 10})
	fillPastShare(t, s, 84)
	c, tok, err := claimFor(s, "a", "a-held", time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("the client's key in flight: %v %v", c.State, err)
	}
	for i := range 10 { // another client's claims in flight: the store is contended
		if c, _, err := claimFor(s, "b", "b"+strconv.Itoa(i), time.Minute); err != nil || !c.Acquired {
			t.Fatalf("the other client's key %d: %v %v", i+1, c.State, err)
		}
	}
	for round := range 3 {
		if err := s.Release(context.Background(), "a-held", tok); err != nil {
			t.Fatal(err)
		}
		c, tok, err = claimFor(s, "a", "a-held", time.Minute)
		if err != nil || !c.Acquired {
			t.Fatalf("round %d: the retry of the client's released key, past its share under contention: %v %v, want acquired", round+1, c.State, err)
		}
	}
	if _, _, err := claimFor(s, "a", "a-new", time.Minute); !errors.Is(err, keystore.ErrStoreFull) {
		t.Fatalf("a new key of the client past its share: %v, want refused", err)
	}
}
