// Package keystoretest is the conformance suite for implementations of
// [keystore.Store]. A store is correct when [Run] passes against it.
//
// The suite talks to the store only through the keystore.Store interface
// (and the optional capabilities adminhttp.Admin, keystore.Pinger and
// keystore.ClientBounded, whose rules a store without them skips), so
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
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

// Run runs every conformance rule against stores made by newStore, each rule
// in its own subtest with its own store. newStore returns a fresh store for
// one test: keys written by one test must be invisible to every other (a
// new instance, key prefix, schema or table). It registers its own cleanup
// with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) keystore.Store) {
	t.Helper()
	rules := []struct {
		name string
		fn   func(t *testing.T, s keystore.Store)
	}{
		{"ClaimAbsentAcquires", testClaimAbsentAcquires},
		{"ConcurrentClaimsOneWinner", testConcurrentClaimsOneWinner},
		{"ConcurrentTakeoverOneWinner", testConcurrentTakeover},
		{"ConcurrentClaimsOfExpiredRecordOneWinner", testConcurrentExpiredRecord},
		{"ClaimHoldsCallersToken", testClaimHoldsCallersToken},
		{"InvalidClaimArgsRefused", testInvalidClaimArgs},
		{"ClaimRepeatedByHolderAcquires", testClaimRepeatedByHolder},
		{"ReleaseFencesToken", testReleaseFencesToken},
		{"ExtendReportsRemainingLease", testExtendReportsRemaining},
		{"CompleteCorruptRecord", testCompleteCorruptRecord},
		{"ClientAndRecordBytes", testClientAndRecordBytes},
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
		{"ReleasedKeyRetryNeverRefused", testReleasedKeyRetryNeverRefused},
		{"CompleteEndsHold", testCompleteEndsHold},
		{"RecordExpiresAfterRetention", testRecordExpires},
		{"CanceledContext", testCanceledContext},
		{"MaxKeyLen", testMaxKeyLen},
		{"CompleteInvalidStatus", testCompleteInvalidStatus},
		{"ExtendAfterOwnCompleteSucceeds", testExtendAfterOwnComplete},
		{"RepeatedCompleteIsIdempotent", testRepeatedComplete},
		{"RepeatedCompleteWithEqualRecord", testRepeatedCompleteEqualRecord},
		{"RepeatedReleaseIsIdempotent", testRepeatedRelease},
		// keystore.Pinger, for the stores that have it.
		{"Pinger", testPinger},
		// keystore.ClientBounded, for the stores that have it.
		{"ClientBoundRefusesPastBound", testClientBoundRefusesPastBound},
		{"ClientBoundCountsOnlyNewKeys", testClientBoundCountsOnlyNewKeys},
		// adminhttp.Admin, for the stores that have it.
		{"AdminInspect", testAdminInspect},
		{"AdminFreeRunOutLease", testAdminFreeRunOutLease},
		{"AdminFreeForce", testAdminFreeForce},
		{"AdminFreeNeverTouchesRecord", testAdminFreeNeverTouchesRecord},
		{"AdminForget", testAdminForget},
		{"AdminSummarize", testAdminSummarize},
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
