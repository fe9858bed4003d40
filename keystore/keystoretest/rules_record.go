package keystoretest

import (
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

func testCompletedRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	want := sampleRecord()
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, want), longRetention); err != nil {
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
	c = mustClaim(t, s, key, fpA, longLease, acquire)
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, record.Record{StatusCode: http.StatusNoContent}), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, record.Record{StatusCode: http.StatusNoContent})
}

func testLargeRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	body := make([]byte, 1<<20)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	want := record.Record{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: body}
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, want), longRetention); err != nil {
		t.Fatalf("Complete with a 1 MiB body: %v", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}

// Complete keeps no reference to the bytes it was given: changing them
// afterwards changes nothing the store returns. (A Claim's Record is the
// caller's to read, never to change: a store may return its own bytes.)
func testRecordIsCopied(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	want := sampleRecord()
	rec := record.Append(nil, want)
	if err := s.Complete(ctx(t), key, c.Token, rec, longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	for i := range rec {
		rec[i] = 'X'
	}
	first := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, first.Record, want)
	second := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, second.Record, want)
}

func testRecordExpires(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), shortRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	var again claimed
	eventually(t, "the record expiring after its retention", func() bool {
		var err error
		again, err = claim(ctx(t), s, key, fpB, longLease)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return again.Acquired
	})
	if again.Fingerprint != fpB {
		t.Errorf("claim after expiry reports fingerprint %x, want the new claimant's", again.Fingerprint[:4])
	}
	if again.TookOver {
		t.Errorf("claim after a record expired reports TookOver; only an expired lease is taken over")
	}
}
