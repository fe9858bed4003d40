package newest_test

import (
	"fmt"
	"time"

	"github.com/geoidem/geoidem/newest"
)

// An in-process store keeps, per feature id, the newest observation: the
// compare and the set under one lock.
func ExampleSupersedes() {
	stored := map[string]newest.Observation{}
	put := func(id, observationTime string, feature []byte) (bool, error) {
		t, err := newest.Parse(observationTime) // RFC 3339; anything else: a 422
		if err != nil {
			return false, err
		}
		incoming := newest.Observation{Time: t, Bytes: feature}
		if old, ok := stored[id]; ok && !newest.Supersedes(old, incoming) {
			return false, nil // stale: acknowledge it, change nothing
		}
		stored[id] = incoming
		return true, nil
	}
	fmt.Println(put("f", "2026-03-01T10:00:09Z", []byte(`{"n":9}`)))
	fmt.Println(put("f", "2026-03-01T10:00:05Z", []byte(`{"n":5}`))) // retried past the newer one
	fmt.Println(stored["f"].Time.Format(time.TimeOnly), string(stored["f"].Bytes))
	_, err := put("f", "yesterday", nil)
	fmt.Println(err)
	// Output:
	// true <nil>
	// false <nil>
	// 10:00:09 {"n":9}
	// "yesterday": not an RFC 3339 date-time
}

// On PostgreSQL the compare and the set are one statement: the row is
// locked and the condition evaluated on its latest committed version, so
// concurrent updates of one id keep the newest. RETURNING gives a row only
// when the update was stored.
func ExamplePostgresCondition() {
	upsert := `INSERT INTO features AS stored (id, observed_at, feature) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET observed_at = EXCLUDED.observed_at, feature = EXCLUDED.feature
WHERE ` + newest.PostgresCondition("stored", "observed_at", "feature") + `
RETURNING true` // no row: stale
	fmt.Println(upsert)
	// Output:
	// INSERT INTO features AS stored (id, observed_at, feature) VALUES ($1, $2, $3)
	// ON CONFLICT (id) DO UPDATE SET observed_at = EXCLUDED.observed_at, feature = EXCLUDED.feature
	// WHERE ("stored"."observed_at" IS NULL OR (EXCLUDED."observed_at" IS NOT NULL AND ("stored"."observed_at" < EXCLUDED."observed_at" OR ("stored"."observed_at" = EXCLUDED."observed_at" AND "stored"."feature" < EXCLUDED."feature"))))
	// RETURNING true
}
