package keystoretest

import (
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
)

// The rules of the optional adminhttp.Admin capability. A store without it
// skips them, visibly.

func admin(t *testing.T, s keystore.Store) adminhttp.Admin {
	t.Helper()
	a, ok := s.(adminhttp.Admin)
	if !ok {
		t.Skipf("%T is not a adminhttp.Admin", s)
	}
	return a
}

func inspect(t *testing.T, a adminhttp.Admin, key string, want keystore.State) adminhttp.Entry {
	t.Helper()
	e, err := a.Inspect(ctx(t), key)
	if err != nil {
		t.Fatalf("Inspect(%.8s…): %v", key, err)
	}
	if e.State != want {
		t.Fatalf("Inspect(%.8s…) = %v, want %v", key, e.State, want)
	}
	return e
}

func testAdminInspect(t *testing.T, s keystore.Store) {
	a := admin(t, s)
	key := Key(t)
	inspect(t, a, key, keystore.Absent)

	c := mustClaim(t, s, key, fpA, longLease, acquire)
	e := inspect(t, a, key, keystore.InFlight)
	if e.Fingerprint != fpA || e.LeaseRunOut || e.LeaseRemaining <= 0 || e.LeaseRemaining > longLease {
		t.Errorf("in flight: %+v, want fingerprint %x, a lease of at most %v running", e, fpA[:4], longLease)
	}
	if e.Token != 0 && e.Token != c.Token {
		t.Errorf("in flight: token %d, want the holder's %d (or 0 where the store keeps none)", e.Token, c.Token)
	}

	rec := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, rec), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	e = inspect(t, a, key, keystore.Completed)
	equalRecords(t, e.Record, rec)
	if e.Fingerprint != fpA || e.RetentionRemaining <= 0 || e.RetentionRemaining > longRetention {
		t.Errorf("completed: fingerprint %x, retention left %v; want %x and at most %v", e.Fingerprint[:4], e.RetentionRemaining, fpA[:4], longRetention)
	}
	// Inspect changes nothing: the record is still replayed.
	mustClaim(t, s, key, fpA, longLease, keystore.Completed)

	other := Key(t)
	c = mustClaim(t, s, other, fpB, longLease, acquire)
	if err := s.Release(ctx(t), other, c.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	inspect(t, a, other, keystore.Released)
}

func testAdminFreeRunOutLease(t *testing.T, s keystore.Store) {
	a := admin(t, s)
	// Free without force must find the lease running. A Free that reaches
	// the store after the lease ran out proves nothing: then the rule
	// starts again with a key claimed for a lease four times as long.
	var (
		key string
		c   claimed
	)
	for lease := shortLease; ; lease *= 4 {
		key = Key(t)
		before := time.Now()
		c = mustClaim(t, s, key, fpA, lease, acquire)
		e, err := a.Free(ctx(t), key, false)
		if errors.Is(err, adminhttp.ErrLeaseRunning) && e.State == keystore.InFlight {
			break
		}
		if time.Since(before) < lease || lease > waitFor {
			t.Fatalf("Free of a running lease without force: %+v, %v; want the entry and ErrLeaseRunning (%v after the Claim of a %v lease)", e, err, time.Since(before).Round(time.Millisecond), lease)
		}
	}
	eventually(t, "the lease running out, as Inspect sees it", func() bool {
		e, err := a.Inspect(ctx(t), key)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if e.State != keystore.InFlight {
			t.Fatalf("Inspect of a key whose lease ran out, unclaimed: %v, want in flight", e.State)
		}
		return e.LeaseRunOut
	})
	e, err := a.Free(ctx(t), key, false)
	if err != nil || e.State != keystore.InFlight || !e.LeaseRunOut {
		t.Fatalf("Free of a run-out lease: %+v, %v; want the in-flight entry it freed", e, err)
	}
	inspect(t, a, key, keystore.Absent)
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete by the freed token: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release by the freed token: %v, want ErrLeaseLost", err)
	}
	n := mustClaim(t, s, key, fpB, longLease, acquire)
	if n.Token == c.Token {
		t.Errorf("the claim after Free reused token %d", n.Token)
	}
	if _, err := a.Free(ctx(t), Key(t), true); !errors.Is(err, adminhttp.ErrNotInFlight) {
		t.Errorf("Free of an absent key: %v, want ErrNotInFlight", err)
	}
}

func testAdminFreeForce(t *testing.T, s keystore.Store) {
	a := admin(t, s)
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	if e, err := a.Free(ctx(t), key, true); err != nil || e.State != keystore.InFlight || e.LeaseRunOut {
		t.Fatalf("forced Free of a running lease: %+v, %v", e, err)
	}
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete by the token freed by force: %v, want ErrLeaseLost: the fence must hold", err)
	}
	if _, err := s.Extend(ctx(t), key, c.Token, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend by the token freed by force: %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, key, fpB, longLease, acquire)
}

func testAdminFreeNeverTouchesRecord(t *testing.T, s keystore.Store) {
	a := admin(t, s)
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	rec := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, rec), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	for _, force := range []bool{false, true} {
		if e, err := a.Free(ctx(t), key, force); !errors.Is(err, adminhttp.ErrNotInFlight) || e.State != keystore.Completed {
			t.Errorf("Free(force=%t) of a completed key: %+v, %v; want the record and ErrNotInFlight", force, e.State, err)
		}
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, rec)
}

func testAdminForget(t *testing.T, s keystore.Store) {
	a := admin(t, s)
	key := Key(t)
	if _, err := a.Forget(ctx(t), key); !errors.Is(err, adminhttp.ErrNotCompleted) {
		t.Errorf("Forget of an absent key: %v, want ErrNotCompleted", err)
	}
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	if e, err := a.Forget(ctx(t), key); !errors.Is(err, adminhttp.ErrNotCompleted) || e.State != keystore.InFlight {
		t.Errorf("Forget of a key in flight: %+v, %v; want ErrNotCompleted", e.State, err)
	}
	inspect(t, a, key, keystore.InFlight)
	rec := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, rec), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	e, err := a.Forget(ctx(t), key)
	if err != nil || e.State != keystore.Completed {
		t.Fatalf("Forget of a completed key: %+v, %v", e.State, err)
	}
	equalRecords(t, e.Record, rec)
	inspect(t, a, key, keystore.Absent)
	mustClaim(t, s, key, fpB, longLease, acquire)
}

func testAdminSummarize(t *testing.T, s keystore.Store) {
	a := admin(t, s)
	sum, err := a.Summarize(ctx(t))
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if sum != (adminhttp.Summary{}) {
		t.Fatalf("Summarize of an empty store: %+v, want zero", sum)
	}
	held, short, done := Key(t), Key(t), Key(t)
	mustClaim(t, s, held, fpA, longLease, acquire)
	mustClaim(t, s, short, fpA, shortLease, acquire)
	c := mustClaim(t, s, done, fpA, longLease, acquire)
	if err := s.Complete(ctx(t), done, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	eventually(t, "the short lease running out, as Summarize counts it", func() bool {
		sum, err = a.Summarize(ctx(t))
		if err != nil {
			t.Fatalf("Summarize: %v", err)
		}
		return sum.LeaseRunOut == 1
	})
	if sum.InFlight != 2 || sum.Completed != 1 || sum.Bytes <= 0 {
		t.Errorf("Summarize: %+v, want 2 in flight (1 run out), 1 completed, some bytes", sum)
	}
	if sum.Oldest != short || sum.OldestState != keystore.InFlight || sum.OldestRemaining > 0 {
		t.Errorf("Summarize: oldest %.8s… (%v, %v left), want the run-out lease %.8s…", sum.Oldest, sum.OldestState, sum.OldestRemaining, short)
	}
}
