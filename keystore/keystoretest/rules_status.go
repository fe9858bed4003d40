package keystoretest

import (
	"errors"
	"math"
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/storecall"
	"github.com/geoidem/geoidem/keystore"
)

// badStatusCodes are status codes no record may carry: unset, negative,
// informational, and beyond 599, up to the extremes of an int32.
var badStatusCodes = []int{0, -1, 1, 99, 100, 101, 199, 600, 999, 1000, math.MaxInt32, math.MinInt32}

// Complete with a status code outside 200–599 fails with an error wrapping
// keystore.ErrInvalidStatus (not ErrLeaseLost), stores nothing and leaves the
// key held by its token; 200 and 599 are accepted.
func testCompleteRefusesInvalidStatus(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	for _, code := range badStatusCodes {
		rec := sampleRecord()
		rec.StatusCode = code
		err := storecall.Complete(ctx(t), s, key, c.Token, rec, longRetention)
		if !errors.Is(err, keystore.ErrInvalidStatus) {
			t.Errorf("Complete with status %d: err = %v, want one wrapping keystore.ErrInvalidStatus", code, err)
		}
		if errors.Is(err, keystore.ErrLeaseLost) {
			t.Errorf("Complete with status %d: err = %v wraps ErrLeaseLost; the token still holds the key", code, err)
		}
	}
	// Nothing was stored: the key is still in flight, held by c.Token.
	in := mustClaim(t, s, key, fpB, longLease, keystore.InFlight)
	if in.Fingerprint != fpA {
		t.Errorf("after the refused completions the key reports fingerprint %x, want %x", in.Fingerprint[:4], fpA[:4])
	}
	if err := storecall.Extend(ctx(t), s, key, c.Token, longLease); err != nil {
		t.Fatalf("Extend after the refused completions: %v (the token must still hold the key)", err)
	}
	for _, code := range []int{keystore.MinStatusCode, keystore.MaxStatusCode} {
		k := key
		tok := c.Token
		if code != keystore.MinStatusCode {
			k = Key(t)
			tok = mustClaim(t, s, k, fpA, longLease, acquire).Token
		}
		want := keystore.Record{StatusCode: code, Body: []byte(http.StatusText(code))}
		if err := storecall.Complete(ctx(t), s, k, tok, want, longRetention); err != nil {
			t.Fatalf("Complete with status %d: %v", code, err)
		}
		got := mustClaim(t, s, k, fpA, longLease, keystore.Completed)
		equalRecords(t, got.Record, want)
	}
}
