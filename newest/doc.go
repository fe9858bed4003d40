// Package newest decides which of two observations of the same feature a
// receiver keeps, so that the stored state is the newest observation
// whatever order the deliveries arrive in.
//
// Exactly-once delivery makes each update take effect once; it does not
// order them. Senders retry with jitter, so an observation made at 10:00:05
// and retried can arrive after one made at 10:00:09, and a store that
// simply overwrites ends up holding the older one, for good. The rule here
// is the one examples/ingest applies on every store.
//
// # The rule
//
//   - An observation with a time supersedes a stored one with an earlier
//     time, and never one with a later time.
//   - Equal times (compared at microsecond precision, which is what
//     PostgreSQL's timestamptz keeps, so that the Go and SQL forms agree)
//     are broken by the feature's bytes: the larger, compared byte-wise
//     (bytes.Compare, PostgreSQL's bytea <), wins; identical bytes do not
//     supersede.
//   - An update without a time (a zero [Observation.Time]) never replaces
//     a stored observation that has one: otherwise anyone could roll a
//     feature back to an older version by sending it without its time. A
//     stamped observation is superseded only by a later stamped one (or
//     an equally timed one with larger bytes).
//   - A stamped update supersedes a stored observation without a time, and
//     an update without a time supersedes a stored one without a time:
//     features that never carry a time keep last-write-wins.
//
// Once a feature has a stamped observation, every replica and every
// arrival order ends on the same one. [Decide] tells which rule applied:
// [Replace], [Stale], or [Unstamped] for an update without a time over a
// stamped observation, so that the answer can say so. An update that does not supersede is not an error:
// the receiver acknowledges it (so the sender stops retrying), records that
// answer like any other, and changes nothing.
//
// # Which times are accepted
//
// The time is the sender's, and [Parse] accepts any RFC 3339 date-time, up
// to 9999-12-31T23:59:59.999999999-23:59. Check it with a [Policy] before
// the compare: one update stamped far ahead would otherwise pin its feature
// (every later update stale until the receiver's clock passes its time).
// [Policy.Check] refuses times more than [Policy.MaxSkew] ahead of the
// receiver's clock (five minutes unless set). There is no lower bound
// (an old time pins nothing) but the first microsecond of year 1, which
// means "no time" once stored.
//
// Every refusal of a time is a [*TimeError], whose Err says why
// ([ErrInvalidTime], [ErrDuplicateMember], [ErrAhead]), naming the
// property with a JSON pointer that the service builds itself
// (/properties/observation_time, or /features/3/properties/observation_time
// in a collection). An invalid or duplicated time is for good: a service
// answers it 422 and records that answer, since a retry carries the same
// time. A time ahead is not: the same time passes once the receiver's
// clock has caught up, so a service answers it with a transient status
// and Retry-After (Time.Sub(Bound)), and releases the key.
//
// # Reading the time from a feature
//
// [FromProperties] reads the time from a Feature's "properties" as
// received (a [github.com/geoidem/geoidem/geojson.RawFeature]'s
// Properties), by its member name, without decoding the rest. A handler
// does, for each feature:
//
//	t, ok, err := newest.FromProperties(f.Properties, "observation_time")
//	if err == nil && ok {
//		err = policy.Check(t)
//	}
//	// err: a *TimeError naming the property (or, for GeoJSON not
//	// validated, ErrInvalidProperties); !ok: no time, t is zero.
//	// stored: what is stored under the feature's id, or the zero Observation.
//	switch newest.Decide(stored, newest.Observation{Time: t, Bytes: f.Raw}) {
//	case newest.Replace: // store it
//	case newest.Stale: // acknowledge it as stale: a newer observation is stored
//	case newest.Unstamped: // acknowledge it: without a time it cannot replace a stamped one
//	}
//
// # In PostgreSQL
//
// [PostgresCondition] is the same rule as the WHERE of an
// INSERT … ON CONFLICT … DO UPDATE, which makes the compare-and-set one
// atomic statement under concurrent updates of one id. When it stores
// nothing, [Refused] gives the verdict from the update alone.
package newest
