package keystoretest

import (
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/storecall"
	"github.com/geoidem/geoidem/keystore"
)

func testCompletedRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	want := sampleRecord()
	if err := storecall.Complete(ctx(t), s, key, c.Token, want, longRetention); err != nil {
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
	if err := storecall.Complete(ctx(t), s, key, c.Token, keystore.Record{StatusCode: http.StatusNoContent}, longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	if got.Record.StatusCode != http.StatusNoContent || len(got.Record.Body) != 0 || len(got.Record.Header) != 0 {
		t.Errorf("empty record came back as %+v", got.Record)
	}
}

func testLargeRecord(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	body := make([]byte, 1<<20)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	want := keystore.Record{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: body}
	if err := storecall.Complete(ctx(t), s, key, c.Token, want, longRetention); err != nil {
		t.Fatalf("Complete with a 1 MiB body: %v", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, want)
}

// Neither the caller's record passed to Complete nor the one returned by
// Claim aliases the store's own copy.
func testRecordIsCopied(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	rec := sampleRecord()
	want := rec.Clone()
	if err := storecall.Complete(ctx(t), s, key, c.Token, rec, longRetention); err != nil {
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

func testRecordExpires(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	if err := storecall.Complete(ctx(t), s, key, c.Token, sampleRecord(), shortRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	var again storecall.Claimed
	eventually(t, "the record expiring after its retention", func() bool {
		var err error
		again, err = storecall.Claim(ctx(t), s, key, fpB, longLease)
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
