package newest_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/geoidem/geoidem/newest"
)

// An in-process store keeps, per feature id, the newest observation: the
// compare and the set under one lock. Each time is checked against the
// receiver's clock first (here a fixed one; nil Now: time.Now).
func ExampleDecide_inProcess() {
	policy := newest.Policy{Now: func() time.Time { return time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC) }}
	stored := map[string]newest.Observation{}
	put := func(id, observationTime string, feature []byte) (bool, error) {
		t, err := newest.Parse(observationTime) // RFC 3339; anything else: a 422
		if err == nil {
			err = policy.Check(t) // far ahead of the receiver's clock: refused until it catches up
		}
		if err != nil {
			return false, err
		}
		incoming := newest.Observation{Time: t, Bytes: feature}
		if old, ok := stored[id]; ok && newest.Decide(old, incoming) != newest.Replace {
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
	_, err = put("f", "9999-12-31T23:59:59.999999999-23:59", nil) // would pin f for good
	fmt.Println(err)
	// Output:
	// true <nil>
	// false <nil>
	// 10:00:09 {"n":9}
	// "yesterday": not an RFC 3339 date-time
	// "9999-12-31T23:59:59.999999999-23:59": ahead of the receiver's clock by more than the allowed skew (latest accepted: 2026-03-01T10:06:00Z)
}

// Decide says which rule kept the stored observation, for the answer: an
// update without a time cannot roll a stamped feature back.
func ExampleDecide() {
	t9 := time.Date(2026, 3, 1, 10, 0, 9, 0, time.UTC)
	stored := newest.Observation{Time: t9, Bytes: []byte(`{"n":9}`)}
	for _, incoming := range []newest.Observation{
		{Time: t9.Add(-4 * time.Second), Bytes: []byte(`{"n":5}`)}, // retried past the newer one
		{Bytes: []byte(`{"n":0}`)},                                 // sent without observation_time
		{Time: t9.Add(time.Second), Bytes: []byte(`{"n":10}`)},
	} {
		v := newest.Decide(stored, incoming)
		if v == newest.Replace {
			stored = incoming
		}
		fmt.Println(string(incoming.Bytes), v)
	}
	fmt.Println("kept", string(stored.Bytes))
	// Output:
	// {"n":5} stale
	// {"n":0} unstamped
	// {"n":10} replace
	// kept {"n":10}
}

// A refusal carries the time and the bound, for the answer.
func ExamplePolicy_Check() {
	clock := func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) }
	policy := newest.Policy{MaxSkew: 2 * time.Minute, Now: clock}
	for _, s := range []string{"2026-03-01T10:01:30Z", "2026-03-01T12:00:00+01:00"} {
		t, _ := newest.Parse(s)
		var te *newest.TimeError
		if err := policy.Check(t); errors.As(err, &te) {
			fmt.Printf("refused %s: %v ahead, %v past the latest accepted, %s\n", s, te.Time.Sub(clock()), te.Time.Sub(te.Bound), te.Bound.Format(time.RFC3339))
			continue
		}
		fmt.Println("accepted", s)
	}
	// Output:
	// accepted 2026-03-01T10:01:30Z
	// refused 2026-03-01T12:00:00+01:00: 1h0m0s ahead, 58m0s past the latest accepted, 2026-03-01T10:02:00Z
}

// A handler reads each feature's time from its properties as received (a
// geojson.RawFeature's Properties), checks it, and names the property in
// its answer when it is refused: a 422 for a time that is invalid, a 503
// with Retry-After for one ahead of the receiver's clock, which the same
// bytes pass once the clock has caught up.
func ExampleFromProperties() {
	policy := newest.Policy{Now: func() time.Time { return time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC) }}
	properties := []string{ // of the features of one FeatureCollection
		`{"name":"a","observation_time":"2026-03-01T10:00:05Z"}`,
		`null`,
		`{"meta":{"observation_time":"nested: not the property"},"observation\u005ftime":"2026-03-01T12:00:09+02:00"}`,
		`{"observation_time":1772359205}`,
		`{"observation_time":"2031-01-01T00:00:00Z"}`,
		`{"observation_time":"2026-03-01T10:00:05Z","observation_time":"2026-03-01T10:00:09Z"}`,
	}
	for i, props := range properties {
		t, ok, err := newest.FromProperties([]byte(props), "observation_time")
		if err == nil && ok {
			err = policy.Check(t)
		}
		var te *newest.TimeError
		switch {
		case errors.Is(err, newest.ErrAhead) && errors.As(err, &te):
			fmt.Printf("503 /features/%d/properties/observation_time, Retry-After %v: %v\n", i, te.Time.Sub(te.Bound), err)
		case err != nil: // a *TimeError
			fmt.Printf("422 /features/%d/properties/observation_time: %v\n", i, err)
		case !ok:
			fmt.Printf("feature %d: no time\n", i)
		default:
			fmt.Printf("feature %d: %s\n", i, t.UTC().Format(time.RFC3339))
		}
	}
	// Output:
	// feature 0: 2026-03-01T10:00:05Z
	// feature 1: no time
	// feature 2: 2026-03-01T10:00:09Z
	// 422 /features/3/properties/observation_time: 1772359205: not an RFC 3339 date-time (not a JSON string)
	// 503 /features/4/properties/observation_time, Retry-After 42397h54m0s: "2031-01-01T00:00:00Z": ahead of the receiver's clock by more than the allowed skew (latest accepted: 2026-03-01T10:06:00Z)
	// 422 /features/5/properties/observation_time: "observation_time": the member appears more than once
}

// On PostgreSQL the compare and the set are one statement: the row is
// locked and the condition evaluated on its latest committed version, so
// concurrent updates of one id keep the newest. RETURNING gives a row only
// when the update was stored; when it gives none, Refused says why.
func ExamplePostgresCondition() {
	upsert := `INSERT INTO features AS stored (id, observed_at, feature) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET observed_at = EXCLUDED.observed_at, feature = EXCLUDED.feature
WHERE ` + newest.PostgresCondition("stored", "observed_at", "feature") + `
RETURNING true` // no row: stale, or unstamped (newest.Refused)
	fmt.Println(upsert)
	// Output:
	// INSERT INTO features AS stored (id, observed_at, feature) VALUES ($1, $2, $3)
	// ON CONFLICT (id) DO UPDATE SET observed_at = EXCLUDED.observed_at, feature = EXCLUDED.feature
	// WHERE ("stored"."observed_at" IS NULL OR (EXCLUDED."observed_at" IS NOT NULL AND ("stored"."observed_at" < EXCLUDED."observed_at" OR ("stored"."observed_at" = EXCLUDED."observed_at" AND "stored"."feature" < EXCLUDED."feature"))))
	// RETURNING true
}
