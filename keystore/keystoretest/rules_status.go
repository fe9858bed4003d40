package keystoretest

import (
	"math"
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// badStatusCodes are status codes no record may carry: unset, negative,
// informational, and beyond 599, up to the extremes of an int32.
var badStatusCodes = []int{0, -1, 1, 99, 100, 101, 199, 600, 999, 1000, math.MaxInt32, math.MinInt32}

// Complete of a record whose status code is outside 200–599 either keeps
// its bytes or (a store that reads the bytes) refuses them with
// ErrInvalidStatus, storing nothing and leaving the key held: see
// refusedOrKept. 200 and 599 are kept.
func testCompleteInvalidStatus(t *testing.T, s keystore.Store) {
	for _, code := range badStatusCodes {
		rec := sampleRecord()
		rec.StatusCode = code
		refusedOrKept(t, s, record.Append(nil, rec), keystore.ErrInvalidStatus)
	}
	for _, code := range []int{record.MinStatusCode, record.MaxStatusCode} {
		k := Key(t)
		tok := mustClaim(t, s, k, fpA, longLease, acquire).Token
		want := record.Record{StatusCode: code, Body: []byte(http.StatusText(code))}
		if err := s.Complete(ctx(t), k, tok, record.Append(nil, want), longRetention); err != nil {
			t.Fatalf("Complete with status %d: %v", code, err)
		}
		got := mustClaim(t, s, k, fpA, longLease, keystore.Completed)
		equalRecords(t, got.Record, want)
	}
}
