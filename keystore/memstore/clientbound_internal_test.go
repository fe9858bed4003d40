package memstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// The counts of clients are bounded: a store keeps those of at most
// MaxEntries clients, however many claim under contention, forgetting the
// window that ends first.
func TestClientCountsBounded(t *testing.T) {
	s := New(Config{MaxEntries: 8, ClientKeys: 1, ClientWindow: time.Hour})
	ctx := context.Background()
	claim := func(key, client string) keystore.Token {
		t.Helper()
		tok := keystore.NewToken()
		c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Hour, Token: tok, Client: client})
		if err != nil || !c.Acquired {
			t.Fatalf("Claim(%q) for %q: %v %v", key, client, c.State, err)
		}
		return tok
	}
	for i := range 6 { // held: the store is contended
		claim("fill"+strconv.Itoa(i), "")
	}
	for i := range 100 { // each client's key, released: not held
		key := "k" + strconv.Itoa(i)
		if err := s.Release(ctx, key, claim(key, "client-"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		s.check(t)
		if len(s.clients) > 8 {
			t.Fatalf("after %d clients, %d counts kept; want at most MaxEntries (8)", i+1, len(s.clients))
		}
	}
	if _, ok := s.clients["client-99"]; !ok || len(s.clients) != 8 {
		t.Fatalf("counts kept %v; want the 8 last clients'", s.clients)
	}
}
