// Package keystoretest is the conformance suite for implementations of
// [keystore.Store]. A store is correct when [Run] passes against it.
//
// The suite talks to the store only through the keystore.Store interface, so
// it runs unchanged against an in-process store, a real Redis or a real
// PostgreSQL server. Rules about time (lease expiry, retention) use short real
// durations and poll the store until a generous deadline, because a networked
// store judges time by its own clock, which a test cannot fake.
//
// Use it from a store's tests:
//
//	func TestConformance(t *testing.T) {
//		keystoretest.Run(t, func(t *testing.T) keystore.Store {
//			return newStoreForTest(t) // a fresh, empty store (own prefix, schema or database)
//		})
//	}
//
// [Linearizable] checks what the rules, one scenario at a time, cannot: it
// runs many clients against a few shared keys, records every call and its
// result, and checks that each key's history is linearizable against the
// sequential model of one key, also while a test breaks the path to the
// store (LinearizableConfig.Faults).
package keystoretest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// NewStore returns a fresh store for one test. Keys written by one test must
// be invisible to every other (a new instance, key prefix, schema or table).
// It registers its own cleanup with t.Cleanup.
type NewStore func(t *testing.T) keystore.Store

// Durations used by the time-based rules. shortLease and shortRetention must
// be long enough for one store round trip on a loaded machine to finish well
// inside them, and waitFor must comfortably exceed them.
const (
	longLease      = time.Minute
	longRetention  = time.Hour
	shortLease     = 300 * time.Millisecond
	shortRetention = 300 * time.Millisecond
	waitFor        = 10 * time.Second
	pollEvery      = 20 * time.Millisecond
)

// Run runs every conformance rule against stores made by newStore, each rule
// in its own subtest with its own store.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	rules := []struct {
		name string
		fn   func(t *testing.T, s keystore.Store)
	}{
		{"ClaimAbsentAcquires", testClaimAbsentAcquires},
		{"ConcurrentClaimsOneWinner", testConcurrentClaimsOneWinner},
		{"ConcurrentTakeoverOneWinner", testConcurrentTakeover},
		{"ConcurrentClaimsOfExpiredRecordOneWinner", testConcurrentExpiredRecord},
		{"TokensAreUniqueAndNonZero", testTokensUnique},
		{"InFlightReportsFingerprintAndLease", testInFlightReportsFingerprint},
		{"CompletedReturnsRecordByteForByte", testCompletedRecord},
		{"CompletedReturnsLargeRecord", testLargeRecord},
		{"RecordIsCopied", testRecordIsCopied},
		{"DifferentKeysAreIndependent", testKeysIndependent},
		{"ExtendKeepsLease", testExtendKeepsLease},
		{"ExpiredLeaseIsTakenOver", testExpiredLeaseTakenOver},
		{"StaleTokenIsFenced", testStaleTokenFenced},
		{"WrongTokenIsFenced", testWrongTokenFenced},
		{"ReleaseMakesKeyClaimable", testReleaseMakesClaimable},
		{"CompleteEndsHold", testCompleteEndsHold},
		{"RecordExpiresAfterRetention", testRecordExpires},
		{"CanceledContext", testCanceledContext},
		{"MaxKeyLen", testMaxKeyLen},
		{"CompleteRefusesInvalidStatus", testCompleteRefusesInvalidStatus},
		{"ExtendAfterOwnCompleteSucceeds", testExtendAfterOwnComplete},
		{"RepeatedCompleteIsIdempotent", testRepeatedComplete},
		{"RepeatedReleaseIsIdempotent", testRepeatedRelease},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			r.fn(t, newStore(t))
		})
	}
}

// Key returns a random key unique to this process run, shaped like the keys
// the middleware passes (64 hexadecimal characters).
func Key(t testing.TB) string {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func fingerprint(s string) keystore.Fingerprint {
	var fp keystore.Fingerprint
	copy(fp[:], s)
	return fp
}

var (
	fpA = fingerprint("payload A")
	fpB = fingerprint("payload B")
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), waitFor)
	t.Cleanup(cancel)
	return c
}

func mustClaim(t *testing.T, s keystore.Store, key string, fp keystore.Fingerprint, lease time.Duration, want keystore.State) keystore.Claim {
	t.Helper()
	c, err := s.Claim(ctx(t), key, fp, lease)
	if err != nil {
		t.Fatalf("Claim(%.8s…): unexpected error: %v", key, err)
	}
	if c.State != want {
		t.Fatalf("Claim(%.8s…) state = %v, want %v", key, c.State, want)
	}
	switch c.State {
	case keystore.Acquired:
		if c.Token == 0 {
			t.Fatalf("Claim acquired with the zero token; a store must never issue it")
		}
		if c.Fingerprint != fp {
			t.Fatalf("acquired Claim reports fingerprint %x, want the caller's %x", c.Fingerprint[:4], fp[:4])
		}
	case keystore.InFlight:
		if c.Token != 0 {
			t.Fatalf("in-flight Claim carries token %d; only an acquiring Claim may return a token", c.Token)
		}
		if c.LeaseRemaining <= 0 {
			t.Fatalf("in-flight Claim reports LeaseRemaining %v; it must be positive", c.LeaseRemaining)
		}
	case keystore.Completed:
		if c.Token != 0 {
			t.Fatalf("completed Claim carries token %d; only an acquiring Claim may return a token", c.Token)
		}
	}
	return c
}

func sampleRecord() keystore.Record {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Add("Link", `</a>; rel="a"`)
	h.Add("Link", `</b>; rel="b"`)
	return keystore.Record{
		StatusCode: http.StatusCreated,
		Header:     h,
		// Bytes that a careless text encoding would damage: NUL, invalid
		// UTF-8, CR LF and a separator-like sequence.
		Body: []byte("{\"id\":\"x\"}\x00\xff\xfe\r\n--\n\t"),
	}
}

func equalRecords(t *testing.T, got, want keystore.Record) {
	t.Helper()
	if got.StatusCode != want.StatusCode {
		t.Errorf("record status = %d, want %d", got.StatusCode, want.StatusCode)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("record body differs: got %d bytes, want %d bytes (first difference at %d)",
			len(got.Body), len(want.Body), firstDiff(got.Body, want.Body))
	}
	if len(got.Header) != len(want.Header) {
		t.Errorf("record has %d header fields %v, want %d %v", len(got.Header), got.Header, len(want.Header), want.Header)
	}
	for k, vs := range want.Header {
		g := got.Header[k]
		if fmt.Sprint(g) != fmt.Sprint(vs) {
			t.Errorf("record header %q = %q, want %q (values and their order must survive)", k, g, vs)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// eventually polls cond until it returns true or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s never happened", waitFor, what)
		}
		time.Sleep(pollEvery)
	}
}

func testClaimAbsentAcquires(t *testing.T, s keystore.Store) {
	c := mustClaim(t, s, Key(t), fpA, longLease, keystore.Acquired)
	if c.TookOver {
		t.Errorf("claim of an absent key reports TookOver")
	}
}

// Exactly one of 64 concurrent claims acquires; the others see the key in
// flight with a positive remaining lease and the winner's fingerprint.
func testConcurrentClaimsOneWinner(t *testing.T, s keystore.Store) {
	const n = 64
	key := Key(t)
	var (
		start    = make(chan struct{})
		wg       sync.WaitGroup
		acquired atomic.Int32
		inFlight atomic.Int32
		mu       sync.Mutex
		problems []string
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fp := fpA
			if i%2 == 1 {
				fp = fpB
			}
			c, err := s.Claim(ctx(t), key, fp, longLease)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("claim %d: %v", i, err))
			case c.State == keystore.Acquired:
				acquired.Add(1)
			case c.State == keystore.InFlight:
				inFlight.Add(1)
				if c.LeaseRemaining <= 0 || c.LeaseRemaining > longLease {
					problems = append(problems, fmt.Sprintf("claim %d: in flight with LeaseRemaining %v, want (0, %v]", i, c.LeaseRemaining, longLease))
				}
				if c.Fingerprint != fpA && c.Fingerprint != fpB {
					problems = append(problems, fmt.Sprintf("claim %d: in flight with a fingerprint no claimant sent", i))
				}
			default:
				problems = append(problems, fmt.Sprintf("claim %d: state %v", i, c.State))
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if acquired.Load() != 1 || inFlight.Load() != n-1 {
		t.Fatalf("of %d concurrent claims, %d acquired and %d saw in flight; want exactly 1 and %d",
			n, acquired.Load(), inFlight.Load(), n-1)
	}
}

// race runs n concurrent claims of key and returns how many acquired (and
// of those, how many took over) and how many saw the key in flight.
func race(t *testing.T, s keystore.Store, key string, n int) (acquired, tookOver, inFlight int) {
	t.Helper()
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, err := s.Claim(ctx(t), key, fpB, longLease)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("claim %d: %v", i, err)
			case c.State == keystore.Acquired:
				acquired++
				if c.TookOver {
					tookOver++
				}
			case c.State == keystore.InFlight:
				inFlight++
			default:
				t.Errorf("claim %d: state %v", i, c.State)
			}
		}()
	}
	close(start)
	wg.Wait()
	return acquired, tookOver, inFlight
}

// waitPast sleeps until d has passed since start, plus a margin for the
// store's clock to have moved past it too.
func waitPast(start time.Time, d time.Duration) {
	time.Sleep(time.Until(start.Add(d + 50*time.Millisecond)))
}

// 64 concurrent claims of a key whose lease has just expired: exactly one
// takes it over.
func testConcurrentTakeover(t *testing.T, s keystore.Store) {
	key := Key(t)
	start := time.Now()
	mustClaim(t, s, key, fpA, shortLease, keystore.Acquired)
	waitPast(start, shortLease)
	acquired, tookOver, inFlight := race(t, s, key, 64)
	if acquired != 1 || tookOver != 1 || inFlight != 63 {
		t.Fatalf("of 64 claims racing for an expired lease, %d acquired (%d by takeover) and %d saw in flight; want exactly 1 takeover and 63",
			acquired, tookOver, inFlight)
	}
}

// 64 concurrent claims of a key whose record has just expired: exactly one
// acquires it, as a fresh claim.
func testConcurrentExpiredRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	start := time.Now()
	if err := s.Complete(ctx(t), key, c.Token, sampleRecord(), shortRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	waitPast(start, shortRetention)
	acquired, tookOver, inFlight := race(t, s, key, 64)
	if acquired != 1 || tookOver != 0 || inFlight != 63 {
		t.Fatalf("of 64 claims racing for an expired record, %d acquired (%d by takeover) and %d saw in flight; want exactly 1 fresh acquire and 63",
			acquired, tookOver, inFlight)
	}
}

func testTokensUnique(t *testing.T, s keystore.Store) {
	key := Key(t)
	seen := map[keystore.Token]bool{}
	for i := range 20 {
		c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
		if seen[c.Token] {
			t.Fatalf("claim %d of the same key reused token %d", i, c.Token)
		}
		seen[c.Token] = true
		if err := s.Release(ctx(t), key, c.Token); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
}

func testInFlightReportsFingerprint(t *testing.T, s keystore.Store) {
	key := Key(t)
	mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	c := mustClaim(t, s, key, fpB, longLease, keystore.InFlight)
	if c.Fingerprint != fpA {
		t.Errorf("in-flight Claim with another payload reports fingerprint %x, want the original %x", c.Fingerprint[:4], fpA[:4])
	}
	if c.LeaseRemaining > longLease {
		t.Errorf("LeaseRemaining %v exceeds the lease %v", c.LeaseRemaining, longLease)
	}
	if c.LeaseRemaining < longLease/2 {
		t.Errorf("LeaseRemaining %v just after a %v claim; the store loses lease time", c.LeaseRemaining, longLease)
	}
}

func testCompletedRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	want := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, want, longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	for _, fp := range []keystore.Fingerprint{fpA, fpB} {
		got := mustClaim(t, s, key, fp, longLease, keystore.Completed)
		if got.Fingerprint != fpA {
			t.Errorf("completed Claim reports fingerprint %x, want the original %x", got.Fingerprint[:4], fpA[:4])
		}
		equalRecords(t, got.Record, want)
	}

	// An empty record (no headers, no body) survives as such.
	key = Key(t)
	c = mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	if err := s.Complete(ctx(t), key, c.Token, keystore.Record{StatusCode: http.StatusNoContent}, longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	if got.Record.StatusCode != http.StatusNoContent || len(got.Record.Body) != 0 || len(got.Record.Header) != 0 {
		t.Errorf("empty record came back as %+v", got.Record)
	}
}

func testLargeRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	body := make([]byte, 1<<20)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	want := keystore.Record{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: body}
	if err := s.Complete(ctx(t), key, c.Token, want, longRetention); err != nil {
		t.Fatalf("Complete with a 1 MiB body: %v", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}

// Neither the caller's record passed to Complete nor the one returned by
// Claim aliases the store's own copy.
func testRecordIsCopied(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	rec := sampleRecord()
	want := rec.Clone()
	if err := s.Complete(ctx(t), key, c.Token, rec, longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	rec.Body[0] = 'X'
	rec.Header.Set("Content-Type", "changed/after-complete")
	first := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, first.Record, want)
	first.Record.Body[0] = 'Y'
	first.Record.Header.Set("Content-Type", "changed/after-claim")
	second := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, second.Record, want)
}

func testKeysIndependent(t *testing.T, s keystore.Store) {
	k1, k2 := Key(t), Key(t)
	c1 := mustClaim(t, s, k1, fpA, longLease, keystore.Acquired)
	c2 := mustClaim(t, s, k2, fpA, longLease, keystore.Acquired)
	if err := s.Complete(ctx(t), k1, c1.Token, sampleRecord(), longRetention); err != nil {
		t.Fatalf("Complete k1: %v", err)
	}
	mustClaim(t, s, k2, fpA, longLease, keystore.InFlight)
	if err := s.Complete(ctx(t), k1, c2.Token, sampleRecord(), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete of k1 with k2's token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), k2, c2.Token); err != nil {
		t.Fatalf("Release k2: %v", err)
	}
	mustClaim(t, s, k1, fpA, longLease, keystore.Completed)
}

func testExtendKeepsLease(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, shortLease, keystore.Acquired)
	// Extend well past the short lease, several times; the key must stay held.
	for range 3 {
		if err := s.Extend(ctx(t), key, c.Token, longLease); err != nil {
			t.Fatalf("Extend: %v", err)
		}
	}
	// A remaining lease far above the original short one proves the
	// extension took effect, without waiting for the short one to pass.
	in := mustClaim(t, s, key, fpB, longLease, keystore.InFlight)
	if in.LeaseRemaining < longLease/2 {
		t.Errorf("after Extend(%v) LeaseRemaining is %v; the claim's lease was %v", longLease, in.LeaseRemaining, shortLease)
	}
	if err := s.Complete(ctx(t), key, c.Token, sampleRecord(), longRetention); err != nil {
		t.Fatalf("Complete after Extend: %v", err)
	}
}

// takeOver waits until a short lease on key expires and another claimant
// takes it over, and returns the new claim.
func takeOver(t *testing.T, s keystore.Store, key string) keystore.Claim {
	t.Helper()
	var c keystore.Claim
	eventually(t, "a claim taking over the expired lease", func() bool {
		var err error
		c, err = s.Claim(ctx(t), key, fpB, longLease)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return c.State == keystore.Acquired
	})
	return c
}

func testExpiredLeaseTakenOver(t *testing.T, s keystore.Store) {
	key := Key(t)
	old := mustClaim(t, s, key, fpA, shortLease, keystore.Acquired)
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
	old := mustClaim(t, s, key, fpA, shortLease, keystore.Acquired)
	cur := takeOver(t, s, key)

	if err := s.Extend(ctx(t), key, old.Token, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend with the stale token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx(t), key, old.Token, sampleRecord(), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
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
	want := keystore.Record{StatusCode: http.StatusAccepted, Body: []byte("new owner")}
	if err := s.Complete(ctx(t), key, cur.Token, want, longRetention); err != nil {
		t.Fatalf("Complete by the new owner: %v", err)
	}
	got := mustClaim(t, s, key, fpB, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
	// And a stale Complete after the new owner's completion overwrites nothing.
	if err := s.Complete(ctx(t), key, old.Token, sampleRecord(), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("stale Complete after the new owner completed: err = %v, want ErrLeaseLost", err)
	}
	got = mustClaim(t, s, key, fpB, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}

func testWrongTokenFenced(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	wrong := c.Token + 1
	if err := s.Extend(ctx(t), key, wrong, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx(t), key, wrong, sampleRecord(), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), key, wrong); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, key, fpA, longLease, keystore.InFlight)
	// Operations on a key that was never claimed are fenced too.
	absent := Key(t)
	if err := s.Extend(ctx(t), absent, c.Token, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend of an absent key: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx(t), absent, c.Token, sampleRecord(), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete of an absent key: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), absent, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release of an absent key: err = %v, want ErrLeaseLost", err)
	}
	mustClaim(t, s, absent, fpA, longLease, keystore.Acquired)
}

func testReleaseMakesClaimable(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	if err := s.Release(ctx(t), key, c.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	again := mustClaim(t, s, key, fpB, longLease, keystore.Acquired)
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
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	want := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, want, longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := s.Extend(ctx(t), key, c.Token, longLease); err != nil {
		t.Errorf("Extend after Complete by the same token: err = %v, want nil, changing nothing (see ExtendAfterOwnCompleteSucceeds)", err)
	}
	if err := s.Release(ctx(t), key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release after Complete: err = %v, want ErrLeaseLost (a completed record must not be deletable)", err)
	}
	other := keystore.Record{StatusCode: http.StatusTeapot}
	if err := s.Complete(ctx(t), key, c.Token, other, longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("second Complete: err = %v, want ErrLeaseLost", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}

func testRecordExpires(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	if err := s.Complete(ctx(t), key, c.Token, sampleRecord(), shortRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	var again keystore.Claim
	eventually(t, "the record expiring after its retention", func() bool {
		var err error
		again, err = s.Claim(ctx(t), key, fpB, longLease)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return again.State == keystore.Acquired
	})
	if again.Fingerprint != fpB {
		t.Errorf("claim after expiry reports fingerprint %x, want the new claimant's", again.Fingerprint[:4])
	}
	if again.TookOver {
		t.Errorf("claim after a record expired reports TookOver; only an expired lease is taken over")
	}
}

func testCanceledContext(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Claim(canceled, Key(t), fpA, longLease); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	if err := s.Extend(canceled, key, c.Token, longLease); !errors.Is(err, context.Canceled) {
		t.Errorf("Extend with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	if err := s.Complete(canceled, key, c.Token, sampleRecord(), longRetention); !errors.Is(err, context.Canceled) {
		t.Errorf("Complete with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	if err := s.Release(canceled, key, c.Token); !errors.Is(err, context.Canceled) {
		t.Errorf("Release with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	// A canceled call must not have completed or released the key.
	mustClaim(t, s, key, fpA, longLease, keystore.InFlight)
	if err := s.Complete(ctx(t), key, c.Token, sampleRecord(), longRetention); err != nil {
		t.Fatalf("Complete after the canceled calls: %v", err)
	}
}

func testMaxKeyLen(t *testing.T, s keystore.Store) {
	long := make([]byte, keystore.MaxKeyLen)
	for i := range long {
		long[i] = "0123456789abcdef"[i%16]
	}
	key := string(long[:keystore.MaxKeyLen-16]) + Key(t)[:16]
	c := mustClaim(t, s, key, fpA, longLease, keystore.Acquired)
	if err := s.Complete(ctx(t), key, c.Token, sampleRecord(), longRetention); err != nil {
		t.Fatalf("Complete with a %d-byte key: %v", len(key), err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, sampleRecord())
}
