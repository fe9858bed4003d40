package keystoretest

import (
	"context"
	"errors"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

func testCanceledContext(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := claim(canceled, s, Key(t), fpA, longLease); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	if _, err := s.Extend(canceled, key, c.Token, longLease); !errors.Is(err, context.Canceled) {
		t.Errorf("Extend with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	if err := s.Complete(canceled, key, c.Token, record.Append(nil, sampleRecord()), longRetention); !errors.Is(err, context.Canceled) {
		t.Errorf("Complete with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	if err := s.Release(canceled, key, c.Token); !errors.Is(err, context.Canceled) {
		t.Errorf("Release with a canceled context: err = %v, want one wrapping context.Canceled", err)
	}
	// A canceled call must not have completed or released the key.
	mustClaim(t, s, key, fpA, longLease, keystore.InFlight)
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Fatalf("Complete after the canceled calls: %v", err)
	}
}

func testMaxKeyLen(t *testing.T, s keystore.Store) {
	long := make([]byte, keystore.MaxKeyLen)
	for i := range long {
		long[i] = "0123456789abcdef"[i%16]
	}
	key := string(long[:keystore.MaxKeyLen-16]) + Key(t)[:16]
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Fatalf("Complete with a %d-byte key: %v", len(key), err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, sampleRecord())
}
