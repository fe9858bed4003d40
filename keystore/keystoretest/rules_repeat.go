package keystoretest

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// The rules in this file pin down what a token may still do after it has
// completed or released its key. A client library may resend an operation
// that was applied when the connection broke before the answer (go-redis
// retries network errors), and a lease renewal may meet the commit of its own
// request's record: those repeats succeed and change nothing, so that
// keystore.ErrLeaseLost keeps meaning "this token lost the key to something
// else, and nothing changed".

// Extend by the token that completed the key succeeds and changes nothing:
// the record stays, for its retention, not for the lease. The renewal of a
// request whose handler committed the record in its own transaction must not
// report the lease lost. Any other token's Extend still fails.
func testExtendAfterOwnComplete(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	want := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, want), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	var extended time.Time
	for range 2 {
		if _, err := s.Extend(ctx(t), key, c.Token, shortLease); err != nil {
			t.Fatalf("Extend by the token that completed the key: err = %v, want nil (its work is recorded, nothing was lost)", err)
		}
		extended = time.Now()
	}
	if _, err := s.Extend(ctx(t), key, c.Token+1, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend of a completed key by another token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release after Complete and Extend: err = %v, want ErrLeaseLost (a completed record must not be deletable)", err)
	}
	// The record outlives the short lease that Extend asked for: waited
	// from the last Extend's return, so that a lease it set has run out.
	waitPast(extended, shortLease)
	got := mustClaim(t, s, key, fpB, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}

// Complete repeated by the same token with the same record succeeds and
// changes nothing; with another record it fails with ErrLeaseLost and the
// first record stays. A stale token is fenced even when it sends the record
// that is stored.
func testRepeatedComplete(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	want := sampleRecord()
	for i := range 3 {
		if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, want), longRetention); err != nil {
			t.Fatalf("Complete #%d by the same token with the same record: err = %v, want nil (a repeat of an applied Complete must succeed)", i+1, err)
		}
	}
	got := mustClaim(t, s, key, fpB, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
	other := record.Record{StatusCode: http.StatusTeapot, Body: []byte("other")}
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, other), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete by the same token with another record: err = %v, want ErrLeaseLost", err)
	}
	got = mustClaim(t, s, key, fpB, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)

	// A stale owner sending the very record the new owner stored is fenced.
	key = Key(t)
	old := mustClaim(t, s, key, fpA, shortLease, acquire)
	cur := takeOver(t, s, key)
	if err := s.Complete(ctx(t), key, cur.Token, record.Append(nil, want), longRetention); err != nil {
		t.Fatalf("Complete by the new owner: %v", err)
	}
	if err := s.Complete(ctx(t), key, old.Token, record.Append(nil, want), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("stale Complete with the stored record: err = %v, want ErrLeaseLost", err)
	}
	if _, err := s.Extend(ctx(t), key, old.Token, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("stale Extend of a key another token completed: err = %v, want ErrLeaseLost", err)
	}
}

// Equal records are equal however they are built: a repeated Complete whose
// record has an empty header or body where the stored one had none (or the
// other way round), or whose header map was filled in another order,
// succeeds like any repeat.
func testRepeatedCompleteEqualRecord(t *testing.T, s keystore.Store) {
	bare := record.Record{StatusCode: http.StatusNoContent}
	empty := record.Record{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: []byte{}}
	ab := record.Record{StatusCode: http.StatusOK, Header: http.Header{}}
	ba := record.Record{StatusCode: http.StatusOK, Header: http.Header{}}
	for _, name := range []string{"A", "B", "C", "D", "E", "F", "G", "H"} {
		ab.Header[name] = []string{name}
	}
	for _, name := range []string{"H", "G", "F", "E", "D", "C", "B", "A"} {
		ba.Header[name] = []string{name}
	}
	for _, p := range []struct {
		what          string
		first, repeat record.Record
	}{
		{"an empty header and body after none", bare, empty},
		{"no header and body after empty ones", empty, bare},
		{"header fields set in another order", ab, ba},
	} {
		key := Key(t)
		c := mustClaim(t, s, key, fpA, longLease, acquire)
		if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, p.first), longRetention); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, p.repeat), longRetention); err != nil {
			t.Errorf("Complete repeated by the same token with an equal record (%s): err = %v, want nil", p.what, err)
		}
	}
}

// Release repeated by the same token succeeds and changes nothing until the
// key is claimed again; after that it fails with ErrLeaseLost and the new
// holder keeps the key.
func testRepeatedRelease(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	for i := range 3 {
		if err := s.Release(ctx(t), key, c.Token); err != nil {
			t.Fatalf("Release #%d by the same token: err = %v, want nil (a repeat of an applied Release must succeed)", i+1, err)
		}
	}
	if _, err := s.Extend(ctx(t), key, c.Token, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend after Release: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete after Release: err = %v, want ErrLeaseLost", err)
	}
	again := mustClaim(t, s, key, fpB, longLease, acquire)
	if again.TookOver {
		t.Errorf("claim after a repeated Release reports TookOver; the key was absent")
	}
	if err := s.Release(ctx(t), key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release by the old token after a new claim: err = %v, want ErrLeaseLost", err)
	}
	in := mustClaim(t, s, key, fpA, longLease, keystore.InFlight)
	if in.Fingerprint != fpB {
		t.Errorf("after the old token's Release the key reports fingerprint %x, want the new holder's %x", in.Fingerprint[:4], fpB[:4])
	}
	// The new holder completes with a short retention. Once the record is
	// gone the key is absent again, as it was after the old token's
	// Release, but the old token has been superseded: its Release is still
	// lost (a store must not keep honouring a release mark across a claim).
	const shortRetention = 100 * time.Millisecond
	if err := s.Complete(ctx(t), key, again.Token, record.Append(nil, sampleRecord()), shortRetention); err != nil {
		t.Fatalf("Complete by the new holder: %v", err)
	}
	waitPast(time.Now(), shortRetention)
	if err := s.Release(ctx(t), key, c.Token); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Release by the old token after a new claim was completed and its record expired: err = %v, want ErrLeaseLost", err)
	}
}
