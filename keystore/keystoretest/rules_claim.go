package keystoretest

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

func testClaimAbsentAcquires(t *testing.T, s keystore.Store) {
	c := mustClaim(t, s, Key(t), fpA, longLease, acquire)
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
			c, err := claim(ctx(t), s, key, fp, longLease)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("claim %d: %v", i, err))
			case c.Acquired:
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

// raced is what n concurrent claims of one key found.
type raced struct {
	acquired, tookOver, inFlight, completed int
	errs                                    []string // the claims that failed, and why
}

// String describes the outcome for a failure message.
func (r raced) String() string {
	s := fmt.Sprintf("%d acquired (%d by takeover), %d saw in flight, %d saw a record", r.acquired, r.tookOver, r.inFlight, r.completed)
	if len(r.errs) > 0 {
		s += fmt.Sprintf(", %d failed (%s)", len(r.errs), strings.Join(r.errs[:min(len(r.errs), 3)], "; "))
	}
	return s
}

// race runs n concurrent claims of key and returns what they found.
func race(t *testing.T, s keystore.Store, key string, n int) raced {
	t.Helper()
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
		r     raced
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, err := claim(ctx(t), s, key, fpB, longLease)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				r.errs = append(r.errs, fmt.Sprintf("claim %d: %v", i, err))
			case c.Acquired:
				r.acquired++
				if c.TookOver {
					r.tookOver++
				}
			case c.State == keystore.InFlight:
				r.inFlight++
			case c.State == keystore.Completed:
				r.completed++
			default:
				r.errs = append(r.errs, fmt.Sprintf("claim %d: state %v", i, c.State))
			}
		}()
	}
	close(start)
	wg.Wait()
	return r
}

// expiryMargin is how long past a lease or a retention the rules that
// need it over wait, for the store's clock to have passed it too.
const expiryMargin = 50 * time.Millisecond

// waitPast sleeps until d, plus expiryMargin, has passed since returned:
// the time the call that started d (a Claim's lease, a Complete's
// retention, an Extend's lease) returned. The store started d no later
// than that, so once waitPast returns d has passed by the store's clock
// too, however long the call took to reach the store. (Measured from
// before the call, a call that reached the store late would leave d
// running.)
func waitPast(returned time.Time, d time.Duration) {
	time.Sleep(time.Until(returned.Add(d + expiryMargin)))
}

// 64 concurrent claims of a key whose lease has just expired: exactly one
// takes it over.
func testConcurrentTakeover(t *testing.T, s keystore.Store) {
	key := Key(t)
	mustClaim(t, s, key, fpA, shortLease, acquire)
	claimed := time.Now()
	waitPast(claimed, shortLease)
	r := race(t, s, key, 64)
	switch {
	case r.acquired == 0 && r.inFlight == 64:
		t.Fatalf("of 64 claims racing for an expired lease, none took it over: the lease of %v was still running %v after the Claim returned (the store keeps a lease longer than asked, or its clock runs slow): %v",
			shortLease, time.Since(claimed).Round(time.Millisecond), r)
	case len(r.errs) > 0:
		t.Fatalf("of 64 claims racing for an expired lease, some failed: %v", r)
	case r.acquired != 1 || r.tookOver != 1 || r.inFlight != 63:
		t.Fatalf("of 64 claims racing for an expired lease: %v; want exactly 1 takeover and 63 in flight (the takeover is not atomic)", r)
	}
}

// 64 concurrent claims of a key whose record has just expired: exactly one
// acquires it, as a fresh claim.
func testConcurrentExpiredRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), shortRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	completed := time.Now()
	waitPast(completed, shortRetention)
	r := race(t, s, key, 64)
	switch {
	case r.completed > 0:
		t.Fatalf("of 64 claims racing for an expired record, some saw it: the record, kept for %v, was still kept %v after Complete returned (the store keeps a record longer than asked, or its clock runs slow): %v",
			shortRetention, time.Since(completed).Round(time.Millisecond), r)
	case len(r.errs) > 0:
		t.Fatalf("of 64 claims racing for an expired record, some failed: %v", r)
	case r.acquired != 1 || r.tookOver != 0 || r.inFlight != 63:
		t.Fatalf("of 64 claims racing for an expired record: %v; want exactly 1 fresh acquire and 63 in flight (the acquisition is not atomic, or a record reappeared)", r)
	}
}

func testInFlightReportsFingerprint(t *testing.T, s keystore.Store) {
	key := Key(t)
	mustClaim(t, s, key, fpA, longLease, acquire)
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
