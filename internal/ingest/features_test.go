package ingest

import (
	"context"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

// A handler run again for a key whose features were already written (its
// record was lost) does not write them twice.
func TestMemFeaturesWriteOncePerKey(t *testing.T) {
	repo := newMemFeatures()
	hold := &keystore.Hold{Key: "k1", Token: 1}
	ctx := keystore.ContextWithHold(context.Background(), hold)
	fs := []feature{{ID: "a", Raw: []byte(`{}`)}}
	for range 2 {
		if _, err := repo.upsert(ctx, fs, keystore.Record{StatusCode: 201}); err != nil {
			t.Fatal(err)
		}
	}
	other := keystore.ContextWithHold(context.Background(), &keystore.Hold{Key: "k2", Token: 2})
	if _, err := repo.upsert(other, fs, keystore.Record{StatusCode: 201}); err != nil {
		t.Fatal(err)
	}
	if w, _ := repo.writes(context.Background()); w["a"] != 2 {
		t.Fatalf("writes of a = %d, want 2: once per key, not once per run", w["a"])
	}
}
