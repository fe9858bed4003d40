// Package newest decides which of two observations of the same feature a
// receiver keeps, so that the stored state is the newest observation
// whatever order the deliveries arrive in.
//
// Exactly-once delivery makes each update take effect once; it does not
// order them. Senders retry with jitter, so an observation made at 10:00:05
// and retried can arrive after one made at 10:00:09, and a store that
// simply overwrites ends up holding the older one, for good. The rule here
// is the one examples/ingest applies on every store:
//
//   - An observation with a time supersedes a stored one with an earlier
//     time, and never one with a later time.
//   - Equal times (compared at microsecond precision, which is what
//     PostgreSQL's timestamptz keeps, so that the Go and SQL forms agree)
//     are broken by the feature's bytes: the larger, compared byte-wise
//     (bytes.Compare, PostgreSQL's bytea <), wins; identical bytes do not
//     supersede. Every replica and every arrival order picks the same
//     winner.
//   - An update without a time (a zero [Observation.Time]) never replaces
//     a stored observation that has one: otherwise anyone could roll a
//     feature back to an older version by sending it without its time. A
//     stamped observation is superseded only by a later stamped one (or
//     an equally timed one with larger bytes).
//   - A stamped update supersedes a stored observation without a time, and
//     an update without a time supersedes a stored one without a time:
//     features that never carry a time keep last-write-wins.
//
// [Decide] tells which rule applied ([Replace], [Stale], or [Unstamped]
// for an update without a time over a stamped observation), so that the
// answer can say so; [Supersedes] is Decide's yes or no. An update that
// does not supersede is not an error: the receiver acknowledges it (so the
// sender stops retrying), records that answer like any other, and changes
// nothing. [PostgresCondition] is the same rule as the WHERE of an
// INSERT … ON CONFLICT … DO UPDATE, which makes the compare-and-set one
// atomic statement under concurrent updates of one id.
package newest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Precision is the resolution at which [Supersedes] compares times: that
// of PostgreSQL's timestamptz, so that [PostgresCondition] decides the same.
const Precision = time.Microsecond

// Observation is one observation of a feature: when it was made (zero:
// unknown) and the feature's bytes, which break a tie of equal times.
type Observation struct {
	Time  time.Time
	Bytes []byte
}

// Supersedes reports whether incoming should replace stored, by the rule of
// the package documentation: Decide(stored, incoming) == Replace.
func Supersedes(stored, incoming Observation) bool {
	return Decide(stored, incoming) == Replace
}

// Verdict is what [Decide] rules for an update: replace the stored
// observation, or keep it and say why.
type Verdict int

const (
	// Replace: the update supersedes the stored observation. Its time is
	// later, or equal with larger bytes, or the stored observation has no
	// time (and then the update either has one, or has none either: last
	// write wins).
	Replace Verdict = iota + 1
	// Stale: the stored observation is newer. Its time is later, or equal
	// with bytes at least as large (identical bytes included).
	Stale
	// Unstamped: the update has no time and the stored observation has
	// one. Nothing tells which is newer, so the stamped one stays; the
	// sender must send the time to change it.
	Unstamped
)

// String returns "replace", "stale" or "unstamped": words a service may
// put in its answer.
func (v Verdict) String() string {
	switch v {
	case Replace:
		return "replace"
	case Stale:
		return "stale"
	case Unstamped:
		return "unstamped"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Refused returns why an update that was not stored was refused, when only
// the update is known (what an upsert on [PostgresCondition] that returns
// no row tells): [Unstamped] when it has no time, else [Stale]. It is what
// [Decide] would have said.
func Refused(incoming Observation) Verdict {
	if incoming.Time.IsZero() {
		return Unstamped
	}
	return Stale
}

// Decide rules whether incoming replaces stored, by the rule of the package
// documentation, and if not, why not.
func Decide(stored, incoming Observation) Verdict {
	switch {
	case stored.Time.IsZero():
		return Replace
	case incoming.Time.IsZero():
		return Unstamped
	}
	s, i := stored.Time.Truncate(Precision), incoming.Time.Truncate(Precision)
	switch {
	case i.After(s):
		return Replace
	case i.Before(s):
		return Stale
	case bytes.Compare(incoming.Bytes, stored.Bytes) > 0:
		return Replace
	}
	return Stale
}

// ErrInvalidTime reports a value that is not an RFC 3339 date-time.
var ErrInvalidTime = errors.New("not an RFC 3339 date-time")

// Parse parses an RFC 3339 date-time ("2026-03-01T10:00:05Z",
// "2026-03-01T12:00:05.25+02:00"), with any number of fractional digits.
// Anything else, an empty string included, fails with an error wrapping
// [ErrInvalidTime]: a receiver must refuse it rather than default it, or a
// malformed update would silently win or lose.
func Parse(s string) (time.Time, error) {
	// time.RFC3339Nano parses RFC 3339 with or without a fraction; the
	// separators are checked first since RFC 3339 allows lowercase t and z
	// and time.Parse does not.
	t, err := time.Parse(time.RFC3339Nano, strings.Map(upperTZ, s))
	// time.Parse also takes "05,25" and an offset of +24:00; RFC 3339 does not.
	if _, off := t.Zone(); err != nil || strings.ContainsRune(s, ',') || off >= 24*3600 || off <= -24*3600 {
		return time.Time{}, fmt.Errorf("%q: %w", s, ErrInvalidTime)
	}
	if t.IsZero() {
		// 0001-01-01T00:00:00Z is Go's zero time, which means "no time":
		// refuse it rather than let it mean last-write-wins.
		return time.Time{}, fmt.Errorf("%q: %w (the zero time)", s, ErrInvalidTime)
	}
	return t, nil
}

func upperTZ(r rune) rune {
	switch r {
	case 't':
		return 'T'
	case 'z':
		return 'Z'
	}
	return r
}

// ParseJSON parses a JSON value that must be a string holding an RFC 3339
// date-time (see [Parse]); a number, null or anything else fails with an
// error wrapping [ErrInvalidTime].
func ParseJSON(value []byte) (time.Time, error) {
	var s string
	if err := json.Unmarshal(value, &s); err != nil {
		return time.Time{}, fmt.Errorf("%s: %w: not a JSON string", truncate(value), ErrInvalidTime)
	}
	return Parse(s)
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// PostgresCondition returns the rule of [Supersedes] as SQL, for the WHERE
// of an upsert's DO UPDATE: stored is the table's name or alias in the
// statement, timeColumn a timestamptz column (NULL: no time), bytesColumn
// the bytea the tie is broken by. Each identifier is quoted.
//
//	INSERT INTO features AS stored (id, observed_at, feature) VALUES ($1, $2, $3)
//	ON CONFLICT (id) DO UPDATE SET observed_at = EXCLUDED.observed_at, feature = EXCLUDED.feature
//	WHERE <PostgresCondition("stored", "observed_at", "feature")>
//	RETURNING true
//
// gives, with its RETURNING, one row when the observation was stored
// (inserted, or superseding) and none when it was not ([Refused] tells
// why: [Unstamped] for an update without a time, else [Stale]). The
// condition is true or false, never NULL. The statement is
// atomic under concurrent updates of one id: the conflicting row is locked
// and the condition evaluated against its latest committed version. Bind
// the time with microseconds at most ([Precision]; pgx truncates to them).
func PostgresCondition(stored, timeColumn, bytesColumn string) string {
	s, t, b := quote(stored), quote(timeColumn), quote(bytesColumn)
	// The IS NOT NULL keeps the condition true or false, never NULL, so
	// that it may also be negated or selected.
	return fmt.Sprintf(`(%[1]s.%[2]s IS NULL OR (EXCLUDED.%[2]s IS NOT NULL AND (%[1]s.%[2]s < EXCLUDED.%[2]s`+
		` OR (%[1]s.%[2]s = EXCLUDED.%[2]s AND %[1]s.%[3]s < EXCLUDED.%[3]s))))`, s, t, b)
}

// quote quotes a PostgreSQL identifier.
func quote(id string) string {
	return `"` + strings.ReplaceAll(id, `"`, `""`) + `"`
}
