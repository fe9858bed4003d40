package newest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
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

// DefaultMaxSkew is how far ahead of the receiver's clock an observation
// time may be when [Policy.MaxSkew] is not set: the tolerance Standard
// Webhooks gives a signature's timestamp, far above the error of a clock
// kept by NTP.
const DefaultMaxSkew = 5 * time.Minute

// ErrAhead reports an observation time further ahead of the receiver's
// clock than its [Policy] allows.
var ErrAhead = errors.New("ahead of the receiver's clock by more than the allowed skew")

// Policy is which observation times a receiver accepts: none further ahead
// of its own clock than MaxSkew. The zero Policy accepts times up to
// [DefaultMaxSkew] ahead of time.Now.
//
// The time is the sender's, and a stored time is superseded only by a
// later one. Without a bound, one update stamped far ahead (RFC 3339 allows
// 9999-12-31T23:59:59.999999999-23:59) pins its feature: every later
// update is stale until the receiver's clock passes that time. One request
// does it, from a sender whose clock jumped or from anyone who may post.
// Checking each time before the compare ([Policy.Check]) limits the pin of
// one update to MaxSkew. It is not authentication: a sender that may
// post at all can keep sending times MaxSkew ahead, or simply wrong
// features; sign the deliveries (package standardwebhooks) to keep
// strangers out.
//
// There is no lower bound, besides [Parse]'s refusal of the first
// microsecond of year 1 (Go's zero time, which means "no time", once
// truncated to [Precision] as PostgreSQL stores it). An old time pins
// nothing: it loses to every later stamped update, and PostgreSQL's
// timestamptz holds all of RFC 3339's years, 0000 to 9999, whatever the
// offset.
//
// A refusal is a [*TimeError] wrapping ErrAhead, for a 422 naming the
// property. It is for good: the idempotency middleware records the 422
// and replays it to the retries, which carry the same time. A sender whose
// clock runs ahead of the receiver's by more than MaxSkew loses its
// updates, so MaxSkew must exceed any honest clock error. Replicas of a
// receiver whose clocks disagree move the bound by as much, no more.
type Policy struct {
	// MaxSkew is how far ahead of Now an observation time may be. Zero or
	// less means DefaultMaxSkew: the bound cannot be turned off.
	MaxSkew time.Duration
	// Now is the receiver's clock; nil means time.Now.
	Now func() time.Time
}

// Check returns nil when t is at most MaxSkew ahead of Now, and otherwise a
// [*TimeError] wrapping [ErrAhead], whose Time is t and whose Bound is the
// latest time accepted (Now plus MaxSkew). A zero t, an observation
// without a time, is accepted: it has nothing to check.
func (p Policy) Check(t time.Time) error {
	if t.IsZero() {
		return nil
	}
	skew := p.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	bound := now().Add(skew)
	if !t.After(bound) {
		return nil
	}
	return &TimeError{Err: ErrAhead, Value: strconv.Quote(t.Format(time.RFC3339Nano)), Time: t, Bound: bound}
}

// TimeError is an observation time that a receiver refuses, for a 422: one
// that is not an RFC 3339 date-time ([ErrInvalidTime]: [Parse],
// [ParseJSON], [FromProperties]), that is given twice
// ([ErrDuplicateMember]: FromProperties) or that is too far ahead of the
// receiver's clock ([ErrAhead]: [Policy.Check]).
//
// It carries no JSON pointer: the caller knows where the value was
// (/properties/observation_time, or /features/3/properties/observation_time
// in a collection) and names it in its answer.
type TimeError struct {
	// Err is the reason, ErrInvalidTime, ErrDuplicateMember or ErrAhead;
	// errors.Is finds it through the TimeError.
	Err error
	// Value is what was refused, for a message: a JSON value as sent
	// (ParseJSON, FromProperties), a quoted string (Parse, and Check's time
	// in RFC 3339), or for ErrDuplicateMember the member's name quoted; cut
	// after 64 bytes with "…".
	Value string
	// Time is the time refused when it parsed (ErrAhead); zero otherwise.
	Time time.Time
	// Bound is the latest time accepted when Check ran (ErrAhead): the
	// receiver's clock plus MaxSkew. Zero otherwise.
	Bound time.Time

	detail string // why, beyond Err; "" if nothing to add
}

// Error reads "<value>: <reason> (<detail>)", e.g.
// "\"yesterday\": not an RFC 3339 date-time".
func (e *TimeError) Error() string {
	reason := "invalid observation time"
	if e.Err != nil {
		reason = e.Err.Error()
	}
	s := e.Value + ": " + reason
	switch {
	case e.detail != "":
		s += " (" + e.detail + ")"
	case errors.Is(e.Err, ErrAhead):
		s += " (latest accepted: " + e.Bound.Format(time.RFC3339Nano) + ")"
	}
	return s
}

// Unwrap returns Err.
func (e *TimeError) Unwrap() error { return e.Err }

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

// ParseJSON parses a JSON value that must be a string holding an RFC 3339
// date-time (see [Parse]); a number, null or anything else fails with a
// [*TimeError] wrapping [ErrInvalidTime].
func ParseJSON(value []byte) (time.Time, error) {
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

// ErrDuplicateMember reports properties that hold the time's member more
// than once, which makes the time ambiguous: encoding/json would take the
// last, another parser the first. I-JSON (RFC 7493) forbids it, and package
// geojson refuses such a document (RuleDuplicateMember), so a validated
// feature never has it.
var ErrDuplicateMember = errors.New("the member appears more than once")

// ErrInvalidProperties reports a Feature's "properties" that are not a
// JSON object or null. Package geojson refuses such a document, so a
// validated feature never has them.
var ErrInvalidProperties = errors.New("properties are not a JSON object or null")

// FromProperties returns the observation time in a Feature's
// "properties": props is their JSON text, member the name of the property
// that holds the time, compared with each top-level member name decoded
// (escapes resolved, so "observation\u005ftime" is "observation_time";
// exact case, never encoding/json's case-insensitive match; invalid UTF-8
// and unpaired surrogates read as U+FFFD, as encoding/json reads them).
// Members of nested objects are not the property, whatever their name.
//
// With package geojson, props is a
// [github.com/geoidem/geoidem/geojson.RawFeature]'s Properties,
// exactly as received:
//
//	doc, err := geojson.DecodeDocument(body, opts) // or the middleware's Document
//	…
//	for i, f := range doc.Features {
//		t, ok, err := newest.FromProperties(f.Properties, "observation_time")
//		if err == nil && ok {
//			err = policy.Check(t)
//		}
//		if err != nil { // a 422 naming /features/<i>/properties/observation_time
//		…
//
// It returns:
//   - ok false and no error when props is nil or empty (a bare geometry's
//     RawFeature), null, or an object without the member: the feature has
//     no time ([Observation] with a zero Time);
//   - the time and ok true when the member's value is a string holding an
//     RFC 3339 date-time ([ParseJSON]);
//   - ok true and a [*TimeError] when the member is there but its value is
//     anything else, null included ([ErrInvalidTime]), or when it is there
//     more than once ([ErrDuplicateMember], whatever the values): never a
//     silent default, never a guess;
//   - ok false and an error wrapping [ErrInvalidProperties] when props is
//     not JSON, or is JSON but not an object or null.
//
// Other members may repeat: that is not this function's business. The
// cost is bounded by len(props): two passes (the syntax check of
// encoding/json's Valid, then a scan that skips every value but the
// member's) without recursion, maps or copies; only the member's value
// is decoded, so a call without the member allocates nothing.
func FromProperties(props []byte, member string) (time.Time, bool, error) {
	if len(props) == 0 {
		return time.Time{}, false, nil
	}
	if !json.Valid(props) {
		return time.Time{}, false, fmt.Errorf("%w: not JSON", ErrInvalidProperties)
	}
	i := skipSpace(props, 0)
	switch props[i] {
	case 'n':
		return time.Time{}, false, nil
	case '{':
	default:
		return time.Time{}, false, fmt.Errorf("%w: %s", ErrInvalidProperties, kind(props[i]))
	}
	var value []byte // the member's value; nil: not seen
	i = skipSpace(props, i+1)
	for props[i] != '}' {
		// props is valid JSON: a name, a colon, a value, then a comma or
		// the closing brace.
		end := skipValue(props, i)
		name := props[i+1 : end-1]
		i = skipSpace(props, skipSpace(props, end)+1)
		end = skipValue(props, i)
		if nameIs(name, member) {
			if value != nil {
				return time.Time{}, true, &TimeError{Err: ErrDuplicateMember, Value: truncate(strconv.Quote(member))}
			}
			value = props[i:end]
		}
		if i = skipSpace(props, end); props[i] == ',' {
			i = skipSpace(props, i+1)
		}
	}
	if value == nil {
		return time.Time{}, false, nil
	}
	t, err := ParseJSON(value)
	return t, true, err
}

// skipSpace returns the index of the first byte of b at or after i that is
// not JSON white space (len(b) if none).
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at b[i],
// b being valid JSON. Nested values are skipped by counting brackets, not
// by recursion.
func skipValue(b []byte, i int) int {
	depth := 0
	for {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++ // the escaped byte: a quote or backslash does not end the string
				}
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		default: // a number, true, false or null
			for i < len(b) && !isDelimiter(b[i]) {
				i++
			}
		}
		if depth == 0 {
			return i
		}
		i = skipSpace(b, i)
		if b[i] == ',' || b[i] == ':' {
			i = skipSpace(b, i+1)
		}
	}
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// nameIs reports whether raw, the content of a JSON string between its
// quotes (valid JSON), decodes to name, decoding as encoding/json does:
// escapes resolved, invalid UTF-8 and unpaired surrogates as U+FFFD. It
// compares rune by rune, without decoding into a copy.
func nameIs(raw []byte, name string) bool {
	var enc [utf8.UTFMax]byte
	for len(raw) > 0 {
		var r rune
		switch c := raw[0]; {
		case c == '\\' && raw[1] == 'u':
			r, raw = hex4(raw[2:6]), raw[6:]
			if utf16.IsSurrogate(r) {
				// A pair when an escaped low surrogate follows; else U+FFFD,
				// and what follows is read on its own.
				low := rune(-1)
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					low = hex4(raw[2:6])
				}
				if r = utf16.DecodeRune(r, low); r != utf8.RuneError {
					raw = raw[6:]
				}
			}
		case c == '\\':
			r, raw = unescape(raw[1]), raw[2:]
		case c < utf8.RuneSelf:
			r, raw = rune(c), raw[1:]
		default:
			var size int
			r, size = utf8.DecodeRune(raw)
			raw = raw[size:]
		}
		n := utf8.EncodeRune(enc[:], r)
		if len(name) < n || name[:n] != string(enc[:n]) {
			return false
		}
		name = name[n:]
	}
	return name == ""
}

// hex4 decodes four hex digits, valid JSON.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unescape decodes the character after a backslash, other than u.
func unescape(c byte) rune {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return rune(c) // '"', '\\' or '/'
}

// kind names the JSON value that starts with c.
func kind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
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
