package memstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// A client may hold more than its share while the store has more than
// the headroom (one share) free: it is refused, with a FullError that
// names the client and says when its room frees, only once the store is
// contended; a newcomer then still claims, in the headroom, up to its
// share.
func TestShareBitesOnlyUnderContention(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 100, MaxClientEntries: 10, ClientBurst: 10})
	ctx := context.Background()
	claimFor := func(client, key string) (keystore.Claim, keystore.Token, error) {
		tok := keystore.NewToken()
		c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: tok, Client: client})
		return c, tok, err
	}
	for i := range 90 { // nine shares: all but the headroom
		_, tok, err := claimFor("a", "a"+strconv.Itoa(i))
		if err != nil {
			t.Fatalf("the lone client's key %d: %v", i+1, err)
		}
		if err := s.Complete(ctx, "a"+strconv.Itoa(i), tok, record.Append(nil, record.Record{StatusCode: 201}), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := claimFor("a", "a-more")
	var fe *keystore.FullError
	if !errors.As(err, &fe) || !errors.Is(err, keystore.ErrStoreFull) || !fe.Client || fe.RetryAfter < 59*time.Minute || fe.RetryAfter > time.Hour {
		t.Fatalf("Claim past the client's share, in the headroom: %v (%+v), want a client FullError with RetryAfter about 1h", err, fe)
	}
	if c, _, err := claimFor("a", "a0"); err != nil || c.State != keystore.Completed {
		t.Fatalf("the client's replay past its share: %v %v, want its record", c.State, err)
	}
	for i := range 10 {
		if c, _, err := claimFor("b", "b"+strconv.Itoa(i)); err != nil || !c.Acquired {
			t.Fatalf("a newcomer's key %d in the headroom: %v %v, want acquired", i+1, c.State, err)
		}
	}
	if _, _, err := claimFor("c", "c0"); !errors.As(err, &fe) || fe.Client {
		t.Fatalf("Claim in a full store: %v, want the store's FullError", err)
	}
	// The whole store full: RetryAfter from the earliest entry to free.
	small := memstore.New(memstore.Config{MaxEntries: 1})
	if _, err := testkit.Claim(ctx, small, "x", fp, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = testkit.Claim(ctx, small, "y", fp, time.Minute)
	if !errors.As(err, &fe) || fe.Client || fe.RetryAfter <= 0 || fe.RetryAfter > time.Minute {
		t.Fatalf("Claim in a full store: %v (%+v), want a FullError with RetryAfter within the lease", err, fe)
	}
}

// Under contention a client under its share acquires new keys at its
// rate, after its burst; the refusal says when the next is due, and a
// replay, a key in flight, or a key the client released is never refused.
func TestRateUnderContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 100, HeadroomEntries: 100, ClientRate: 0.5, ClientBurst: 3})
		ctx := context.Background()
		claimFor := func(key string, tok keystore.Token) (keystore.Claim, error) {
			return s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Hour, Token: tok, Client: "a"})
		}
		toks := map[string]keystore.Token{}
		for i := range 3 {
			key := "k" + strconv.Itoa(i)
			toks[key] = keystore.NewToken()
			if c, err := claimFor(key, toks[key]); err != nil || !c.Acquired {
				t.Fatalf("key %d of the burst: %v %v", i+1, c.State, err)
			}
		}
		if err := s.Complete(ctx, "k0", toks["k0"], record.Append(nil, record.Record{StatusCode: 201}), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "k2", toks["k2"]); err != nil {
			t.Fatal(err)
		}
		_, err := claimFor("k3", keystore.NewToken())
		var fe *keystore.FullError
		if !errors.As(err, &fe) || !fe.Client || fe.RetryAfter <= 0 || fe.RetryAfter > 2*time.Second {
			t.Fatalf("a new key past the burst: %v, want a client FullError with RetryAfter within 2s", err)
		}
		for range 10 {
			if c, err := claimFor("k0", keystore.NewToken()); err != nil || c.State != keystore.Completed {
				t.Fatalf("replay past the rate: %v %v", c.State, err)
			}
			if c, err := claimFor("k1", keystore.NewToken()); err != nil || c.Acquired || c.State != keystore.InFlight {
				t.Fatalf("duplicate of a key in flight past the rate: %v %v", c.State, err)
			}
		}
		if c, err := claimFor("k2", keystore.NewToken()); err != nil || !c.Acquired {
			t.Fatalf("the client's released key, claimed again past the rate: %v %v, want acquired", c.State, err)
		}
		time.Sleep(fe.RetryAfter)
		if c, err := claimFor("k3", keystore.NewToken()); err != nil || !c.Acquired {
			t.Fatalf("the refused key, at its Retry-After: %v %v, want acquired", c.State, err)
		}
		if _, err := claimFor("k4", keystore.NewToken()); !errors.As(err, &fe) || !fe.Client {
			t.Fatalf("the next new key at once: %v, want refused", err)
		}
	})
}
