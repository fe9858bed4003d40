package service

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/newest"
)

func answer201([]newest.Verdict) Answer { return Answer{StatusCode: 201} }

// The in-memory feature store is bounded by entries and bytes: when full
// it refuses the write (ErrStoreFull, a 507) and never evicts a stored
// feature; a write that could never fit is the request's own fault (a
// RefusedError for the whole request, a 422).
func TestMemoryFeaturesBounded(t *testing.T) {
	repo := newMemoryFeatures(3, 1000)
	put := func(fs ...Feature) error {
		_, err := repo.Upsert(context.Background(), nil, fs, answer201)
		return err
	}
	raw := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	if err := put(Feature{ID: "a", Raw: raw(100)}, Feature{ID: "b", Raw: raw(100)}); err != nil {
		t.Fatal(err)
	}
	if err := put(Feature{ID: "c", Raw: raw(100)}, Feature{ID: "d", Raw: raw(100)}); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("a fourth entry: %v, want ErrStoreFull", err)
	}
	if err := put(Feature{ID: "a", Raw: raw(900)}); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("growing past the byte budget: %v, want ErrStoreFull", err)
	}
	if err := put(Feature{ID: "a", Raw: raw(300)}, Feature{ID: "c", Raw: raw(10)}); err != nil {
		t.Fatalf("replacing a feature within budget: %v", err)
	}
	var re *RefusedError
	if err := put(Feature{ID: "z", Raw: raw(5000)}); !errors.As(err, &re) || re.Index != -1 || !errors.Is(err, errTooLarge) {
		t.Fatalf("a feature larger than the whole budget: %v, want a RefusedError of the whole request", err)
	}
	for id, n := range map[string]int{"a": 300, "b": 100, "c": 10} {
		if f, ok, _ := repo.Get(context.Background(), id); !ok || len(f) != n {
			t.Errorf("feature %s: %d bytes (present %v), want %d: nothing is evicted", id, len(f), ok, n)
		}
	}
	if _, ok, _ := repo.Get(context.Background(), "d"); ok {
		t.Error("feature d of the refused write was stored")
	}
}

// The store keeps a copy of the bytes: the request body a Feature points
// into is reused by the server once the handler returns.
func TestMemoryFeaturesCopyWhatTheyKeep(t *testing.T) {
	repo := newMemoryFeatures(0, 0)
	body := []byte(`{"n":1}`)
	if _, err := repo.Upsert(context.Background(), nil, []Feature{{ID: "f", Raw: body}}, answer201); err != nil {
		t.Fatal(err)
	}
	copy(body, `{"n":2}`)
	if f, _, _ := repo.Get(context.Background(), "f"); string(f) != `{"n":1}` {
		t.Errorf("stored %s after the body was reused, want {\"n\":1}", f)
	}
}

// An update older than the stored one is stale, an update without a time
// over a stamped one unstamped, every time it runs: a handler run again
// (its record lost) answers what the first run did, and writes nothing.
// The store has no per-key guard: the verdict comes from the data.
func TestMemoryFeaturesVerdicts(t *testing.T) {
	repo := newMemoryFeatures(0, 0)
	at := func(s int) time.Time { return time.Date(2026, 3, 1, 10, 0, s, 0, time.UTC) }
	newer := Feature{ID: "f", Raw: []byte(`{"n":9}`), Observed: at(9)}
	older := Feature{ID: "f", Raw: []byte(`{"n":5}`), Observed: at(5)}
	plain := Feature{ID: "f", Raw: []byte(`{"n":0}`)}
	put := func(fs ...Feature) Answer {
		t.Helper()
		rec, err := repo.Upsert(context.Background(), nil, fs, func(v []newest.Verdict) Answer { return answerFor(fs, v) })
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if rec := put(newer); rec.StatusCode != 201 || string(rec.Body) != `{"stored":["f"]}` {
		t.Fatalf("the newer: %d %s", rec.StatusCode, rec.Body)
	}
	for range 2 {
		if rec := put(older); rec.StatusCode != 200 || string(rec.Body) != `{"stored":[],"stale":["f"]}` {
			t.Fatalf("the older update: %d %s; want 200 stale", rec.StatusCode, rec.Body)
		}
		if rec := put(plain); rec.StatusCode != 200 || string(rec.Body) != `{"stored":[],"unstamped":["f"]}` {
			t.Fatalf("the update without a time: %d %s; want 200 unstamped", rec.StatusCode, rec.Body)
		}
	}
	if rec := put(Feature{ID: "g", Raw: []byte(`1`)}, plain, older, Feature{ID: "g", Raw: []byte(`2`)}); rec.StatusCode != 201 ||
		string(rec.Body) != `{"stored":["g","g"],"stale":["f"],"unstamped":["f"]}` {
		t.Fatalf("a collection: %d %s", rec.StatusCode, rec.Body)
	}
	if f, _, _ := repo.Get(context.Background(), "f"); string(f) != `{"n":9}` {
		t.Errorf("stored %s, want the newer", f)
	}
	if f, _, _ := repo.Get(context.Background(), "g"); string(f) != `2` {
		t.Errorf("stored %s, want the last of g (no time: last write wins)", f)
	}
}
