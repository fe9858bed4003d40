package keystoretest

import (
	"errors"
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

func testExtendKeepsLease(t *testing.T, s keystore.Store) {
	key := Key(t)
	// A lease the calls that follow fit in however slow the store, far
	// shorter than the extension all the same.
	const lease = waitFor
	c := mustClaim(t, s, key, fpA, lease, acquire)
	// Extend well past the claim's lease, several times; the key must stay held.
	for range 3 {
		if _, err := s.Extend(ctx(t), key, c.Token, longLease); err != nil {
			t.Fatalf("Extend: %v", err)
		}
	}
	// A remaining lease far above the original one proves the extension
	// took effect, without waiting for the original one to pass.
	in := mustClaim(t, s, key, fpB, longLease, keystore.InFlight)
	if in.LeaseRemaining < longLease/2 {
		t.Errorf("after Extend(%v) LeaseRemaining is %v; the claim's lease was %v", longLease, in.LeaseRemaining, lease)
	}
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Fatalf("Complete after Extend: %v", err)
	}
}

// takeOver waits until a short lease on key expires and another claimant
// takes it over, and returns the new claim.
func takeOver(t *testing.T, s keystore.Store, key string) claimed {
	t.Helper()
	var c claimed
	eventually(t, "a claim taking over the expired lease", func() bool {
		var err error
		c, err = claim(ctx(t), s, key, fpB, longLease)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return c.Acquired
	})
	return c
}

func testExpiredLeaseTakenOver(t *testing.T, s keystore.Store) {
	key := Key(t)
	old := mustClaim(t, s, key, fpA, shortLease, acquire)
	c := takeOver(t, s, key)
	if !c.TookOver {
		t.Errorf("taking over an expired lease does not report TookOver")
	}
	if c.Token == old.Token {
		t.Errorf("takeover reused the expired token %d", c.Token)
	}
	if c.Fingerprint != fpB {
		t.Errorf("takeover reports fingerprint %x, want the new claimant's %x", c.Fingerprint[:4], fpB[:4])
	}
}

// After a takeover, the old owner's Extend, Complete and Release all fail
// with ErrLeaseLost and change nothing.
func testStaleTokenFenced(t *testing.T, s keystore.Store) {
	key := Key(t)
	old := mustClaim(t, s, key, fpA, shortLease, acquire)
	cur := takeOver(t, s, key)

	if _, err := s.Extend(ctx(t), key, old.Token, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend with the stale token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx(t), key, old.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete with the stale token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), key, old.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release with the stale token: err = %v, want ErrLeaseLost", err)
	}
	// Nothing changed: the new owner still holds the key and can complete it.
	in := mustClaim(t, s, key, fpA, longLease, keystore.InFlight)
	if in.Fingerprint != fpB {
		t.Errorf("after the stale calls the key reports fingerprint %x, want the new owner's %x", in.Fingerprint[:4], fpB[:4])
	}
	want := record.Record{StatusCode: http.StatusAccepted, Body: []byte("new owner")}
	if err := s.Complete(ctx(t), key, cur.Token, record.Append(nil, want), longRetention); err != nil {
		t.Fatalf("Complete by the new owner: %v", err)
	}
	got := mustClaim(t, s, key, fpB, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
	// And a stale Complete after the new owner's completion overwrites nothing.
	if err := s.Complete(ctx(t), key, old.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("stale Complete after the new owner completed: err = %v, want ErrLeaseLost", err)
	}
	got = mustClaim(t, s, key, fpB, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}

func testWrongTokenFenced(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	wrong := c.Token + 1
	if _, err := s.Extend(ctx(t), key, wrong, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx(t), key, wrong, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), key, wrong); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, key, fpA, longLease, keystore.InFlight)
	// Operations on a key that was never claimed are fenced too.
	absent := Key(t)
	if _, err := s.Extend(ctx(t), absent, c.Token, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend of an absent key: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx(t), absent, c.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete of an absent key: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), absent, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release of an absent key: err = %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, absent, fpA, longLease, acquire)
}

func testKeysIndependent(t *testing.T, s keystore.Store) {
	k1, k2 := Key(t), Key(t)
	c1 := mustClaim(t, s, k1, fpA, longLease, acquire)
	c2 := mustClaim(t, s, k2, fpA, longLease, acquire)
	if err := s.Complete(ctx(t), k1, c1.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Fatalf("Complete k1: %v", err)
	}
	mustClaim(t, s, k2, fpA, longLease, keystore.InFlight)
	if err := s.Complete(ctx(t), k1, c2.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete of k1 with k2's token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), k2, c2.Token); err != nil {
		t.Fatalf("Release k2: %v", err)
	}
	mustClaim(t, s, k1, fpA, longLease, keystore.Completed)
}

func testReleaseMakesClaimable(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	if err := s.Release(ctx(t), key, c.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	again := mustClaim(t, s, key, fpB, longLease, acquire)
	if again.TookOver {
		t.Errorf("claim after Release reports TookOver; the key was absent")
	}
	if err := s.Release(ctx(t), key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("second Release with the released token: err = %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, key, fpA, longLease, keystore.InFlight)
}

func testCompleteEndsHold(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	want := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, want), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := s.Extend(ctx(t), key, c.Token, longLease); err != nil {
		t.Errorf("Extend after Complete by the same token: err = %v, want nil, changing nothing (see ExtendAfterOwnCompleteSucceeds)", err)
	}
	if err := s.Release(ctx(t), key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release after Complete: err = %v, want ErrLeaseLost (a completed record must not be deletable)", err)
	}
	other := record.Record{StatusCode: http.StatusTeapot}
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, other), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("second Complete: err = %v, want ErrLeaseLost", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}
