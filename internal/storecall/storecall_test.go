package storecall_test

import (
	"context"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/storecall"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// Claim returns its token only when it acquired the key; Complete and
// Extend reach the store with it.
func TestCalls(t *testing.T) {
	ctx, s, fp := context.Background(), new(memstore.Store), keystore.Fingerprint{1}
	first, err := storecall.Claim(ctx, s, "k", fp, time.Minute)
	if err != nil || !first.Acquired || first.Token == 0 {
		t.Fatalf("first Claim: %+v, %v; want acquired with a token", first, err)
	}
	second, err := storecall.Claim(ctx, s, "k", fp, time.Minute)
	if err != nil || second.Acquired || second.Token != 0 {
		t.Fatalf("second Claim: %+v, %v; want in flight, no token", second, err)
	}
	if err := storecall.Extend(ctx, s, "k", first.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := storecall.Extend(ctx, s, "k", first.Token+1, time.Hour); err == nil {
		t.Error("Extend by another token succeeded")
	}
	rec := keystore.Record{StatusCode: 201, Body: []byte("{}")}
	if err := storecall.Complete(ctx, s, "k", first.Token, rec, time.Hour); err != nil {
		t.Fatal(err)
	}
	third, err := storecall.Claim(ctx, s, "k", fp, time.Minute)
	if err != nil || third.State != keystore.Completed || third.Record.StatusCode != 201 {
		t.Fatalf("after Complete: %+v, %v; want the record", third, err)
	}
}
