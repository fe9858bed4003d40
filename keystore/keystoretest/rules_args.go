package keystoretest

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// The rules of a Claim's inputs (keystore.ClaimArgs), of the lease Extend
// reports, and of the fence a Release puts on its token.

// The key is held by the token the caller chose: Extend and Complete with
// it succeed, with any other token they fail.
func testClaimHoldsCallersToken(t *testing.T, s keystore.Store) {
	key := Key(t)
	tok := keystore.NewToken()
	c, err := s.Claim(ctx(t), key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok})
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: acquired %v, err %v; want it acquired", c.Acquired, err)
	}
	if _, err := s.Extend(ctx(t), key, tok+1, longLease); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Extend with a token other than the Claim's: err = %v, want ErrLeaseLost", err)
	}
	if _, err := s.Extend(ctx(t), key, tok, longLease); err != nil {
		t.Errorf("Extend with the Claim's own token: %v", err)
	}
	if err := s.Complete(ctx(t), key, tok, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Errorf("Complete with the Claim's own token: %v", err)
	}
}

// A Claim whose inputs break the contract fails with ErrInvalidClaim and
// claims nothing.
func testInvalidClaimArgs(t *testing.T, s keystore.Store) {
	key := Key(t)
	for _, bad := range []struct {
		what string
		a    keystore.ClaimArgs
	}{
		{"a zero token", keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease}},
		{"a zero lease", keystore.ClaimArgs{Fingerprint: fpA, Token: keystore.NewToken()}},
		{"a negative lease", keystore.ClaimArgs{Fingerprint: fpA, Lease: -time.Second, Token: keystore.NewToken()}},
		{"a negative RecordBytes", keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: keystore.NewToken(), RecordBytes: -1}},
	} {
		if _, err := s.Claim(ctx(t), key, bad.a); !errors.Is(err, keystore.ErrInvalidClaim) {
			t.Errorf("Claim with %s: err = %v, want one wrapping keystore.ErrInvalidClaim", bad.what, err)
		}
	}
	mustClaim(t, s, key, fpB, longLease, acquire) // nothing was claimed
}

// A Claim repeated with the token that holds the key (a client library's
// resend of a Claim that was applied) reports it acquired, and changes
// nothing: the key is still held by that token, with the fingerprint of
// its first Claim.
func testClaimRepeatedByHolder(t *testing.T, s keystore.Store) {
	key := Key(t)
	tok := keystore.NewToken()
	a := keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok}
	if c, err := s.Claim(ctx(t), key, a); err != nil || !c.Acquired {
		t.Fatalf("Claim: acquired %v, err %v; want it acquired", c.Acquired, err)
	}
	again, err := s.Claim(ctx(t), key, a)
	if err != nil || !again.Acquired || again.State != keystore.InFlight {
		t.Fatalf("Claim repeated with the holder's token: acquired %v, state %v, err %v; want it acquired (a resend of an applied Claim must not find its own entry in flight)", again.Acquired, again.State, err)
	}
	if again.TookOver || again.Fingerprint != fpA {
		t.Errorf("repeated Claim: TookOver %v, fingerprint %x; want false and the original %x", again.TookOver, again.Fingerprint[:4], fpA[:4])
	}
	other := mustClaim(t, s, key, fpB, longLease, keystore.InFlight)
	if other.Fingerprint != fpA {
		t.Errorf("after the repeated Claim another claimant sees fingerprint %x, want %x", other.Fingerprint[:4], fpA[:4])
	}
	if err := s.Complete(ctx(t), key, tok, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Errorf("Complete after the repeated Claim: %v", err)
	}
}

// A Release fences its token, held or not: a Claim with that token that
// reaches the store afterwards (a Claim whose reply was lost, resent or
// delayed) fails with ErrLeaseLost and acquires nothing, on an absent key,
// a key the token released itself, and a key whose lease ran out; the key
// stays free for every other token.
func testReleaseFencesToken(t *testing.T, s keystore.Store) {
	t.Run("AbsentKey", func(t *testing.T) {
		key := Key(t)
		tok := keystore.NewToken()
		if err := s.Release(ctx(t), key, tok); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("Release of an absent key: err = %v, want ErrLeaseLost", err)
		}
		// The fence is not a release by the token: a repeat is not the
		// repeat of a release it made, and fails too.
		if err := s.Release(ctx(t), key, tok); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("Release of an absent key, repeated: err = %v, want ErrLeaseLost (the token never held the key)", err)
		}
		c, err := s.Claim(ctx(t), key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok})
		if !errors.Is(err, keystore.ErrLeaseLost) || c.Acquired {
			t.Fatalf("Claim with a token released before it arrived: acquired %v, err %v; want ErrLeaseLost (the Release fences the token)", c.Acquired, err)
		}
		mustClaim(t, s, key, fpB, longLease, acquire)
	})
	t.Run("ReleasedByIt", func(t *testing.T) {
		key := Key(t)
		c := mustClaim(t, s, key, fpA, longLease, acquire)
		if err := s.Release(ctx(t), key, c.Token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		again, err := s.Claim(ctx(t), key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: c.Token})
		if !errors.Is(err, keystore.ErrLeaseLost) || again.Acquired {
			t.Fatalf("Claim with the token that released the key: acquired %v, err %v; want ErrLeaseLost", again.Acquired, err)
		}
		mustClaim(t, s, key, fpB, longLease, acquire)
	})
	t.Run("LeaseRanOut", func(t *testing.T) {
		key := Key(t)
		mustClaim(t, s, key, fpA, shortLease, acquire)
		claimed := time.Now()
		tok := keystore.NewToken()
		if err := s.Release(ctx(t), key, tok); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("Release by a token that does not hold the key: err = %v, want ErrLeaseLost", err)
		}
		waitPast(claimed, shortLease)
		c, err := s.Claim(ctx(t), key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok})
		if !errors.Is(err, keystore.ErrLeaseLost) || c.Acquired {
			t.Fatalf("Claim of an expired lease with a released token: acquired %v, err %v; want ErrLeaseLost", c.Acquired, err)
		}
		if c := mustClaim(t, s, key, fpB, longLease, acquire); !c.TookOver {
			t.Errorf("the next Claim did not take the expired lease over")
		}
	})
}

// Extend returns the lease that remained before it: positive and at most
// the lease the key was held for, and zero for the repeat by the token
// that completed the key.
func testExtendReportsRemaining(t *testing.T, s keystore.Store) {
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	left, err := s.Extend(ctx(t), key, c.Token, longLease)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if left <= 0 || left > longLease {
		t.Errorf("Extend reports %v left of a %v lease just claimed; want it in (0, %v]", left, longLease, longLease)
	}
	if left < longLease/2 {
		t.Errorf("Extend reports %v left of a %v lease just claimed; the store loses lease time", left, longLease)
	}
	if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if left, err := s.Extend(ctx(t), key, c.Token, longLease); err != nil || left != 0 {
		t.Errorf("Extend after the token's own Complete: %v, %v; want 0, nil", left, err)
	}
}

// Complete of bytes that are not the middleware's record encoding exactly
// as it writes it either keeps them, byte for byte, or (a store that reads
// the bytes) refuses them with ErrCorruptRecord, storing nothing and
// leaving the key held: see refusedOrKept.
func testCompleteCorruptRecord(t *testing.T, s keystore.Store) {
	good := record.Append(nil, sampleRecord())
	for _, bad := range [][]byte{nil, {}, {0x80}, good[:2], append([]byte{0x96, 0x83, 0x00}, good[2:]...)} {
		refusedOrKept(t, s, bad, keystore.ErrCorruptRecord)
	}
}

// refusedOrKept checks Complete with bad, bytes a store may refuse with an
// error wrapping want (see keystore.Store's Complete), on a key of its
// own: either Complete succeeds and every Claim returns bad byte for
// byte, or it fails with want (and not ErrLeaseLost), stores nothing and
// leaves the key held by its token, which then completes it with a
// record the store keeps. Any other outcome breaks the contract.
func refusedOrKept(t *testing.T, s keystore.Store, bad []byte, want error) {
	t.Helper()
	key := Key(t)
	c := mustClaim(t, s, key, fpA, longLease, acquire)
	err := s.Complete(ctx(t), key, c.Token, bad, longRetention)
	if err == nil {
		got := mustClaim(t, s, key, fpB, longLease, keystore.Completed)
		if !bytes.Equal(got.Record, bad) {
			t.Errorf("Complete with % x… kept it, but Claim returns % x…; want the same bytes", bad[:min(len(bad), 8)], got.Record[:min(len(got.Record), 8)])
		}
		return
	}
	if !errors.Is(err, want) || errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete with % x…: err = %v; want nil (kept) or one wrapping %v (refused), never ErrLeaseLost", bad[:min(len(bad), 8)], err, want)
		return
	}
	// Refused: nothing was stored, and the token still holds the key.
	if in := mustClaim(t, s, key, fpB, longLease, keystore.InFlight); in.Fingerprint != fpA {
		t.Errorf("after the refused Complete the key reports fingerprint %x, want %x", in.Fingerprint[:4], fpA[:4])
	}
	if _, err := s.Extend(ctx(t), key, c.Token, longLease); err != nil {
		t.Fatalf("Extend after the refused Complete: %v (the token must still hold the key)", err)
	}
	good := record.Append(nil, sampleRecord())
	if err := s.Complete(ctx(t), key, c.Token, good, longRetention); err != nil {
		t.Fatalf("Complete after the refused one: %v", err)
	}
	// The store keeps no reference to the caller's bytes.
	for i := range good {
		good[i] = 0
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, sampleRecord())
}

// A Claim that names a client and the room its record needs acquires like
// any other, and its key completes with a record of exactly that size.
func testClientAndRecordBytes(t *testing.T, s keystore.Store) {
	key := Key(t)
	const size = 4096
	rec := record.Record{StatusCode: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}}
	rec.Body = bytes.Repeat([]byte("x"), size-record.Len(rec))
	if n := record.Len(rec); n != size {
		t.Fatalf("test record is %d bytes, want %d", n, size)
	}
	tok := keystore.NewToken()
	c, err := s.Claim(ctx(t), key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok, Client: "client-a", RecordBytes: size})
	if err != nil || !c.Acquired {
		t.Fatalf("Claim with a client and RecordBytes: acquired %v, err %v", c.Acquired, err)
	}
	if err := s.Complete(ctx(t), key, tok, record.Append(nil, rec), longRetention); err != nil {
		t.Fatalf("Complete with a record of RecordBytes: %v", err)
	}
	got := mustClaim(t, s, key, fpA, longLease, keystore.Completed)
	equalRecords(t, got.Record, rec)
}
