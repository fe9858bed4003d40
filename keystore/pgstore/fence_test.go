package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// The fence a Release puts on its token (keystore: "Claims whose outcome is
// unknown") holds wherever the Release found the key, for at least the
// grace after the Release, whatever happens to the key's row meanwhile: a
// Claim with the token that reaches the store later fails with
// ErrLeaseLost instead of acquiring the key. pgstore's Claim can reach the
// database up to a minute after its caller gave up (a batch statement runs
// detached, see batchTimeout), so each of these is a way for a key to be
// held, for its whole lease, by a token whose caller has released it.

// claimWith claims key with token tok, as a Claim that reaches the store
// after its caller released tok.
func claimWith(t *testing.T, s keystore.Store, key string, tok keystore.Token) (keystore.Claim, error) {
	t.Helper()
	return s.Claim(testCtx(t), key, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: tok})
}

func mustBeFenced(t *testing.T, s keystore.Store, key string, tok keystore.Token, what string) {
	t.Helper()
	if c, err := claimWith(t, s, key, tok); !errors.Is(err, keystore.ErrLeaseLost) || c.Acquired {
		t.Fatalf("%s: Claim with the released token: acquired %v, err %v; want ErrLeaseLost", what, c.Acquired, err)
	}
}

// A Release that finds the key completed fences its token too: once the
// record's retention has ended, a Claim with the token must not acquire
// the key.
func TestReleaseFencesTokenOnLiveRecord(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	tok := keystore.NewToken()
	if err := s.Release(ctx, key, tok); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("Release of a completed key by another token: %v, want ErrLeaseLost", err)
	}
	claim(t, s, key, time.Minute, keystore.Completed) // the record is untouched
	expireLease(t, pool, s, key)                      // its retention ends
	mustBeFenced(t, s, key, tok, "after the record's retention ended")
	if got := claim(t, s, key, time.Minute, acquire); got.TookOver {
		t.Errorf("the claim of the expired record reports TookOver")
	}
}

// The token that released the key itself stays fenced after another token
// claimed and released the key again.
func TestReleaserStaysFencedAfterAnotherClaim(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	first := claim(t, s, key, time.Minute, acquire)
	if err := s.Release(ctx, key, first.Token); err != nil {
		t.Fatal(err)
	}
	second := claim(t, s, key, time.Minute, acquire)
	if err := s.Release(ctx, key, second.Token); err != nil {
		t.Fatal(err)
	}
	mustBeFenced(t, s, key, first.Token, "after another claim and release")
	mustBeFenced(t, s, key, second.Token, "after its own release")
	claim(t, s, key, time.Minute, acquire)
}

// Prune keeps a fence for the grace after the Release, even on a row whose
// lease or retention ended long before: the row expired more than Prune's
// grace ago when the token was fenced on it.
func TestPruneKeepsFence(t *testing.T) {
	for _, kind := range []string{"Lease", "Record", "Released"} {
		t.Run(kind, func(t *testing.T) {
			pool := newPool(t, 4, nil)
			s := newStore(t, pool, pgstore.Config{})
			ctx := testCtx(t)
			key := keystoretest.Key(t)
			c := claim(t, s, key, time.Minute, acquire)
			switch kind {
			case "Record":
				if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
					t.Fatal(err)
				}
			case "Released":
				if err := s.Release(ctx, key, c.Token); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := pool.Exec(ctx, "UPDATE "+s.Table()+" SET expires_at = clock_timestamp() - interval '10 minutes' WHERE key = $1", key); err != nil {
				t.Fatal(err)
			}
			tok := keystore.NewToken()
			if err := s.Release(ctx, key, tok); !errors.Is(err, keystore.ErrLeaseLost) {
				t.Fatalf("Release by a token that does not hold the key: %v, want ErrLeaseLost", err)
			}
			if _, err := s.Prune(ctx); err != nil {
				t.Fatal(err)
			}
			mustBeFenced(t, s, key, tok, "after Prune")
			got := claim(t, s, key, time.Minute, acquire)
			if want := kind == "Lease"; got.TookOver != want {
				t.Errorf("the next claim reports TookOver %v, want %v", got.TookOver, want)
			}
		})
	}
}

// A fence is kept for Prune's grace, then pruned with its row.
func TestPruneDropsOldFence(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	if err := s.Release(ctx, key, keystore.NewToken()); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("Release of an absent key: %v, want ErrLeaseLost", err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune right after the Release deleted %d rows (%v), want none", n, err)
	}
	if _, err := pool.Exec(ctx, "UPDATE "+s.Table()+" SET expires_at = expires_at - interval '2 minutes', fenced_at = fenced_at - interval '2 minutes' WHERE key = $1", key); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune two minutes after the Release deleted %d rows (%v), want the fence's", n, err)
	}
}

// A Release repeated by a token that does not hold the key fences it
// once: the row does not grow with each repeat.
func TestRepeatedFenceIsKeptOnce(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	claim(t, s, key, time.Minute, acquire)
	tok := keystore.NewToken()
	for range 3 {
		if err := s.Release(ctx, key, tok); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("Release by a token that does not hold the key: %v, want ErrLeaseLost", err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT cardinality(fenced) FROM "+s.Table()+" WHERE key = $1", key).Scan(&n); err != nil || n != 1 {
		t.Errorf("after three Releases of one token the row fences %d tokens (%v), want 1", n, err)
	}
}
