package newest

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrInvalidTime reports a value that is not an RFC 3339 date-time.
var ErrInvalidTime = errors.New("not an RFC 3339 date-time")

// Parse parses an RFC 3339 date-time ("2026-03-01T10:00:05Z",
// "2026-03-01T12:00:05.25+02:00"), with any number of fractional digits.
// Anything else, an empty string included, fails with a [*TimeError]
// wrapping [ErrInvalidTime]: a receiver must refuse it rather than default
// it, or a malformed update would silently win or lose. So does a time
// within the first microsecond of year 1 (0001-01-01T00:00:00Z is Go's
// zero time, which means "no time", and the rest of that microsecond is
// the zero time once truncated to [Precision], as PostgreSQL stores it).
// Times far ahead are valid here: refuse them with [Policy.Check].
func Parse(s string) (time.Time, error) {
	// time.RFC3339Nano parses RFC 3339 with or without a fraction; the
	// separators are checked first since RFC 3339 allows lowercase t and z
	// and time.Parse does not.
	t, err := time.Parse(time.RFC3339Nano, strings.Map(upperTZ, s))
	// time.Parse also takes "05,25" and an offset of +24:00; RFC 3339 does not.
	if _, off := t.Zone(); err != nil || strings.ContainsRune(s, ',') || off >= 24*3600 || off <= -24*3600 {
		return time.Time{}, &TimeError{Err: ErrInvalidTime, Value: truncate(strconv.Quote(s))}
	}
	if t.Truncate(Precision).IsZero() {
		// Refuse it rather than let it mean "no time", here or once stored.
		return time.Time{}, &TimeError{Err: ErrInvalidTime, Value: truncate(strconv.Quote(s)), detail: "the zero time"}
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

// parseJSON parses a JSON value that must be a string holding an RFC 3339
// date-time (see [Parse]); a number, null or anything else fails with a
// [*TimeError] wrapping [ErrInvalidTime].
func parseJSON(value []byte) (time.Time, error) {
	var s string
	if err := json.Unmarshal(value, &s); err != nil {
		return time.Time{}, &TimeError{Err: ErrInvalidTime, Value: truncate(string(value)), detail: "not a JSON string"}
	}
	t, err := Parse(s)
	if err != nil {
		e := *err.(*TimeError)
		e.Value = truncate(string(value))
		return time.Time{}, &e
	}
	return t, nil
}

// truncate cuts a value for a message after 64 bytes (never inside a
// UTF-8 sequence).
func truncate(s string) string {
	if len(s) <= 64 {
		return s
	}
	i := 64
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
