package ingest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// A handler run again for a key whose features were already written (its
// record was lost) does not write them twice.
func TestMemFeaturesWriteOncePerKey(t *testing.T) {
	repo := newMemFeatures(0, 0, nil)
	hold := &keystore.Hold{Key: "k1", Token: 1}
	ctx := keystore.ContextWithHold(context.Background(), hold)
	fs := []feature{{ID: "a", Raw: []byte(`{}`)}}
	for range 2 {
		if _, err := repo.upsert(ctx, fs, answer201); err != nil {
			t.Fatal(err)
		}
	}
	other := keystore.ContextWithHold(context.Background(), &keystore.Hold{Key: "k2", Token: 2})
	if _, err := repo.upsert(other, fs, answer201); err != nil {
		t.Fatal(err)
	}
	if w, _ := repo.writes(context.Background()); w["a"] != 2 {
		t.Fatalf("writes of a = %d, want 2: once per key, not once per run", w["a"])
	}
}

// The in-memory feature store is bounded by entries and bytes: when full
// it refuses the write (transient: errStoreFull) and never evicts a stored
// feature; a write that could never fit is refused as permanent
// (errTooLarge).
func TestMemFeaturesBounded(t *testing.T) {
	repo := newMemFeatures(3, 1000, nil)
	put := func(key string, fs ...feature) error {
		ctx := keystore.ContextWithHold(context.Background(), &keystore.Hold{Key: key, Token: 1})
		_, err := repo.upsert(ctx, fs, answer201)
		return err
	}
	raw := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	if err := put("k1", feature{ID: "a", Raw: raw(100)}, feature{ID: "b", Raw: raw(100)}); err != nil {
		t.Fatal(err)
	}
	if err := put("k2", feature{ID: "c", Raw: raw(100)}, feature{ID: "d", Raw: raw(100)}); !errors.Is(err, errStoreFull) {
		t.Fatalf("a fourth entry: %v, want errStoreFull", err)
	}
	if err := put("k3", feature{ID: "a", Raw: raw(900)}); !errors.Is(err, errStoreFull) {
		t.Fatalf("growing past the byte budget: %v, want errStoreFull", err)
	}
	if err := put("k4", feature{ID: "a", Raw: raw(300)}, feature{ID: "c", Raw: raw(10)}); err != nil {
		t.Fatalf("replacing a feature within budget: %v", err)
	}
	if err := put("k5", feature{ID: "z", Raw: raw(5000)}); !errors.Is(err, errTooLarge) {
		t.Fatalf("a feature larger than the whole budget: %v, want errTooLarge", err)
	}
	for id, n := range map[string]int{"a": 300, "b": 100, "c": 10} {
		if f, ok, _ := repo.get(context.Background(), id); !ok || len(f) != n {
			t.Errorf("feature %s: %d bytes (present %v), want %d: nothing is evicted", id, len(f), ok, n)
		}
	}
	if _, ok, _ := repo.get(context.Background(), "d"); ok {
		t.Error("feature d of the refused write was stored")
	}
}

func answer201([]bool) keystore.Record { return keystore.Record{StatusCode: 201} }

// A handler run again for a key whose update was stale (its record was
// lost) answers stale again, not stored: the answer of the run that wrote.
func TestMemFeaturesStaleAnswerKeptPerKey(t *testing.T) {
	repo := newMemFeatures(0, 0, nil)
	newer := feature{ID: "f", Raw: []byte(`{"n":9}`), Observed: time.Date(2026, 3, 1, 10, 0, 9, 0, time.UTC)}
	older := feature{ID: "f", Raw: []byte(`{"n":5}`), Observed: time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC)}
	put := func(key string, f feature) keystore.Record {
		t.Helper()
		ctx := keystore.ContextWithHold(context.Background(), &keystore.Hold{Key: key, Token: 1})
		rec, err := repo.upsert(ctx, []feature{f}, func(stale []bool) keystore.Record { return answerFor([]feature{f}, stale) })
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	put("k2", newer)
	for range 2 {
		if rec := put("k1", older); rec.StatusCode != 200 || string(rec.Body) != `{"stored":[],"stale":["f"]}` {
			t.Fatalf("the older update: %d %s; want 200 stale", rec.StatusCode, rec.Body)
		}
	}
	if f, _, _ := repo.get(context.Background(), "f"); string(f) != `{"n":9}` {
		t.Errorf("stored %s, want the newer", f)
	}
	if w, _ := repo.writes(context.Background()); w["f"] != 1 {
		t.Errorf("writes of f = %d, want 1: a stale update writes nothing", w["f"])
	}
}
