package newest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Precision is the resolution at which [Decide] compares times: that
// of PostgreSQL's timestamptz, so that [PostgresCondition] decides the same.
const Precision = time.Microsecond

// Observation is one observation of a feature: when it was made (zero:
// unknown) and the feature's bytes, which break a tie of equal times.
type Observation struct {
	Time  time.Time
	Bytes []byte
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

// PostgresCondition returns the rule of [Decide] (its [Replace]) as SQL, for the WHERE
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
