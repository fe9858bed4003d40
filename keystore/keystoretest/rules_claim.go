package keystoretest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/storecall"
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
			c, err := storecall.Claim(ctx(t), s, key, fp, longLease)
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
			c, err := storecall.Claim(ctx(t), s, key, fpB, longLease)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("claim %d: %v", i, err)
			case c.Acquired:
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
	mustClaim(t, s, key, fpA, shortLease, acquire)
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
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	start := time.Now()
	if err := storecall.Complete(ctx(t), s, key, c.Token, sampleRecord(), shortRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	waitPast(start, shortRetention)
	acquired, tookOver, inFlight := race(t, s, key, 64)
	if acquired != 1 || tookOver != 0 || inFlight != 63 {
		t.Fatalf("of 64 claims racing for an expired record, %d acquired (%d by takeover) and %d saw in flight; want exactly 1 fresh acquire and 63",
			acquired, tookOver, inFlight)
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
