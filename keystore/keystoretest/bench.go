package keystoretest

import (
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// RunBenchmarks measures the operations the middleware performs per request
// against stores made by newStore:
//
//   - FirstCall: Claim of a new key, then Complete (what a first delivery costs);
//   - Replay: Claim of a completed key (what every retry costs);
//   - ReplayParallel: Replay from GOMAXPROCS goroutines on one hot key;
//   - ClaimRelease: Claim, then Release (what a 5xx answer costs);
//   - FirstCallClient and ReplayClient: FirstCall and Replay with a
//     client named in the claims (ClaimArgs.Client), which a
//     keystore.ClientBounded store counts: configure it with a bound the
//     benchmark never reaches.
//
// New keys in the timed loop are a random prefix and a counter, 64
// hexadecimal characters as the middleware's are, so the cost of making
// them is negligible. Call it from a benchmark:
//
//	func BenchmarkStore(b *testing.B) { keystoretest.RunBenchmarks(b, newStore) }
func RunBenchmarks(b *testing.B, newStore func(b *testing.B) keystore.Store) {
	rec := record.Append(nil, record.Record{
		StatusCode: http.StatusCreated,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       []byte(`{"stored":["feature-1"]}`),
	})
	firstCall(b, newStore, "FirstCall", "", rec)
	firstCall(b, newStore, "FirstCallClient", "bench-client", rec)
	replay(b, newStore, "Replay", "", rec)
	replay(b, newStore, "ReplayClient", "bench-client", rec)
	b.Run("ReplayParallel", func(b *testing.B) {
		s := newStore(b)
		key := completedKey(b, s, rec)
		ctx := b.Context()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: keystore.NewToken()})
				if err != nil || c.State != keystore.Completed {
					b.Errorf("Claim: %v %v", c.State, err)
					return
				}
			}
		})
	})
	b.Run("ClaimRelease", func(b *testing.B) {
		s := newStore(b)
		key := Key(b)
		ctx := b.Context()
		for b.Loop() {
			tok := keystore.NewToken()
			c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok})
			if err != nil || !c.Acquired {
				b.Fatalf("Claim: %v %v", c.State, err)
			}
			if err := s.Release(ctx, key, tok); err != nil {
				b.Fatalf("Release: %v", err)
			}
		}
	})
}

func firstCall(b *testing.B, newStore func(b *testing.B) keystore.Store, name, client string, rec []byte) {
	b.Run(name, func(b *testing.B) {
		s := newStore(b)
		ctx := b.Context()
		var buf [64]byte
		copy(buf[:], Key(b))
		n := uint64(0)
		for b.Loop() {
			n++
			key := counterKey(&buf, n)
			tok := keystore.NewToken()
			c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok, Client: client})
			if err != nil || !c.Acquired {
				b.Fatalf("Claim: %v %v", c.State, err)
			}
			if err := s.Complete(ctx, key, tok, rec, longRetention); err != nil {
				b.Fatalf("Complete: %v", err)
			}
		}
	})
}

// counterKey writes n as the last 16 hexadecimal digits of the key in
// buf and returns the key: a new key shaped like the ones the middleware
// passes (64 hexadecimal characters), which a store may treat apart from
// others (memstore hashes any other key).
func counterKey(buf *[64]byte, n uint64) string {
	const digits = "0123456789abcdef"
	for i := len(buf) - 1; i >= len(buf)-16; i-- {
		buf[i] = digits[n&15]
		n >>= 4
	}
	return string(buf[:])
}

func replay(b *testing.B, newStore func(b *testing.B) keystore.Store, name, client string, rec []byte) {
	b.Run(name, func(b *testing.B) {
		s := newStore(b)
		key := completedKey(b, s, rec)
		ctx := b.Context()
		for b.Loop() {
			c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: keystore.NewToken(), Client: client})
			if err != nil || c.State != keystore.Completed {
				b.Fatalf("Claim: %v %v", c.State, err)
			}
		}
	})
}

func completedKey(b *testing.B, s keystore.Store, rec []byte) string {
	b.Helper()
	key := Key(b)
	tok := keystore.NewToken()
	c, err := s.Claim(b.Context(), key, keystore.ClaimArgs{Fingerprint: fpA, Lease: longLease, Token: tok})
	if err != nil || !c.Acquired {
		b.Fatalf("Claim: %v %v", c.State, err)
	}
	if err := s.Complete(b.Context(), key, tok, rec, longRetention); err != nil {
		b.Fatalf("Complete: %v", err)
	}
	return key
}
