package newest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/newest"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSupersedes(t *testing.T) {
	t5, t9 := at("2026-03-01T10:00:05Z"), at("2026-03-01T10:00:09Z")
	obs := func(t time.Time, b string) newest.Observation { return newest.Observation{Time: t, Bytes: []byte(b)} }
	const replace, stale, unstamped = newest.Replace, newest.Stale, newest.Unstamped
	for _, c := range []struct {
		name             string
		stored, incoming newest.Observation
		want             newest.Verdict
	}{
		{"newer", obs(t5, "a"), obs(t9, "a"), replace},
		{"older", obs(t9, "a"), obs(t5, "z"), stale},
		{"equal, larger bytes", obs(t9, "a"), obs(t9, "b"), replace},
		{"equal, smaller bytes", obs(t9, "b"), obs(t9, "a"), stale},
		{"equal, identical bytes", obs(t9, "a"), obs(t9, "a"), stale},
		{"equal, a prefix is smaller", obs(t9, "ab"), obs(t9, "a"), stale},
		{"equal instants in other zones", obs(at("2026-03-01T12:00:09+02:00"), "a"), obs(t9, "b"), replace},
		{"equal to the microsecond", obs(at("2026-03-01T10:00:09.0000019Z"), "b"), obs(at("2026-03-01T10:00:09.0000011Z"), "a"), stale},
		{"a microsecond later", obs(at("2026-03-01T10:00:09.000001999Z"), "b"), obs(at("2026-03-01T10:00:09.000002Z"), "a"), replace},
		// An update without a time never replaces a stamped observation:
		// anyone could otherwise roll a feature back by leaving the time out.
		{"no incoming time over a stamped one", obs(t9, "a"), obs(time.Time{}, "z"), unstamped},
		{"no incoming time over a stamped one, smaller bytes", obs(t9, "z"), obs(time.Time{}, "a"), unstamped},
		{"stamped over no stored time", obs(time.Time{}, "z"), obs(t5, "a"), replace},
		{"no time on either: last write wins", obs(time.Time{}, "z"), obs(time.Time{}, "a"), replace},
		{"no time on either, identical bytes", obs(time.Time{}, "a"), obs(time.Time{}, "a"), replace},
	} {
		if got := newest.Decide(c.stored, c.incoming); got != c.want {
			t.Errorf("%s: Decide = %v, want %v", c.name, got, c.want)
		}
	}
	for v, want := range map[newest.Verdict]string{replace: "replace", stale: "stale", unstamped: "unstamped", 0: "Verdict(0)"} {
		if v.String() != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", int(v), v.String(), want)
		}
	}
}

// The rule is an order: whatever order the observations arrive in, the
// one kept is the same, updates without a time among them included (they
// never replace a stamped one, and every stamped one replaces them).
func TestSupersedesAnyArrivalOrder(t *testing.T) {
	base := at("2026-03-01T10:00:00Z")
	var obs []newest.Observation
	for i := range 30 {
		obs = append(obs, newest.Observation{Time: base.Add(time.Duration(i%7) * time.Second), Bytes: []byte{byte(i % 5), byte(i)}})
	}
	for i := range 5 {
		obs = append(obs, newest.Observation{Bytes: []byte{0xff, byte(i)}})
	}
	var want []byte
	for round := range 50 {
		rng := rand.New(rand.NewPCG(uint64(round), 1))
		perm := rng.Perm(len(obs))
		kept := obs[perm[0]]
		for _, i := range perm[1:] {
			if newest.Decide(kept, obs[i]) == newest.Replace {
				kept = obs[i]
			}
		}
		if round == 0 {
			want = kept.Bytes
		} else if string(kept.Bytes) != string(want) {
			t.Fatalf("arrival order %d kept %v, order 0 kept %v", round, kept.Bytes, want)
		}
	}
}

// A receiver that checks each time with a Policy before the compare: an
// observation time far ahead of its clock, valid RFC 3339 and sent by
// anyone, must be refused, or it pins the feature (every later stamped
// update is stale until the clock passes it).
func TestPolicyRefusesFarFuturePin(t *testing.T) {
	now := at("2026-03-01T10:00:00Z")
	policy := newest.Policy{MaxSkew: time.Minute, Now: func() time.Time { return now }}
	var stored newest.Observation
	put := func(observationTime string, feature string) (newest.Verdict, error) {
		tm, err := newest.Parse(observationTime)
		if err == nil {
			err = policy.Check(tm)
		}
		if err != nil {
			return 0, err
		}
		incoming := newest.Observation{Time: tm, Bytes: []byte(feature)}
		v := newest.Decide(stored, incoming)
		if v == newest.Replace {
			stored = incoming
		}
		return v, nil
	}
	const far = "9999-12-31T23:59:59.999999999-23:59"
	if v, err := put(far, `{"pin":true}`); err == nil {
		t.Fatalf("Check(%s) accepted it (%v); want ErrAhead", far, v)
	} else if !errors.Is(err, newest.ErrAhead) {
		t.Fatalf("Check(%s) = %v, want ErrAhead", far, err)
	}
	now = now.Add(time.Second)
	if v, err := put("2026-03-01T10:00:01Z", `{"n":1}`); v != newest.Replace || err != nil {
		t.Fatalf("an update at the receiver's time after the far-future one: %v, %v; want replace", v, err)
	}
}

// Check refuses a time further ahead of Now than MaxSkew, with what a 422
// needs: the reason, the time, the bound. Zero MaxSkew (or less) is
// DefaultMaxSkew; a zero time (no time) and old times are accepted.
func TestPolicyCheck(t *testing.T) {
	now := at("2026-03-01T10:00:00Z")
	clock := func() time.Time { return now }
	for _, c := range []struct {
		name   string
		policy newest.Policy
		t      time.Time
		bound  time.Time // zero: accepted
	}{
		{"at the bound", newest.Policy{MaxSkew: time.Minute, Now: clock}, now.Add(time.Minute), time.Time{}},
		{"a nanosecond past the bound", newest.Policy{MaxSkew: time.Minute, Now: clock}, now.Add(time.Minute + 1), now.Add(time.Minute)},
		{"behind the clock", newest.Policy{MaxSkew: time.Minute, Now: clock}, now.Add(-time.Hour), time.Time{}},
		{"no time", newest.Policy{MaxSkew: time.Minute, Now: clock}, time.Time{}, time.Time{}},
		{"the earliest RFC 3339 time", newest.Policy{MaxSkew: time.Minute, Now: clock}, at("0000-01-01T00:00:00+23:59"), time.Time{}},
		{"far ahead", newest.Policy{MaxSkew: time.Minute, Now: clock}, at("9999-12-31T23:59:59.999999999-23:59"), now.Add(time.Minute)},
		{"zero MaxSkew: the default", newest.Policy{Now: clock}, now.Add(newest.DefaultMaxSkew), time.Time{}},
		{"zero MaxSkew: past the default", newest.Policy{Now: clock}, now.Add(newest.DefaultMaxSkew + 1), now.Add(newest.DefaultMaxSkew)},
		{"negative MaxSkew: the default", newest.Policy{MaxSkew: -time.Hour, Now: clock}, now.Add(newest.DefaultMaxSkew + 1), now.Add(newest.DefaultMaxSkew)},
	} {
		err := c.policy.Check(c.t)
		if c.bound.IsZero() {
			if err != nil {
				t.Errorf("%s: Check = %v, want nil", c.name, err)
			}
			continue
		}
		var te *newest.TimeError
		if !errors.As(err, &te) || !errors.Is(err, newest.ErrAhead) {
			t.Errorf("%s: Check = %v, want a *TimeError wrapping ErrAhead", c.name, err)
			continue
		}
		if !te.Time.Equal(c.t) || !te.Bound.Equal(c.bound) {
			t.Errorf("%s: TimeError{Time: %v, Bound: %v}, want {%v, %v}", c.name, te.Time, te.Bound, c.t, c.bound)
		}
	}
	err := newest.Policy{MaxSkew: time.Minute, Now: clock}.Check(at("9999-12-31T23:59:59.999999999-23:59"))
	const want = `"9999-12-31T23:59:59.999999999-23:59": ahead of the receiver's clock by more than the allowed skew (latest accepted: 2026-03-01T10:01:00Z)`
	if err == nil || err.Error() != want {
		t.Errorf("Check(far ahead) = %v, want %s", err, want)
	}
	// A nil Now is the real clock: a time a day ahead of it is refused.
	if err := (newest.Policy{}).Check(time.Now().Add(24 * time.Hour)); !errors.Is(err, newest.ErrAhead) {
		t.Errorf("zero Policy, a day ahead of time.Now: %v, want ErrAhead", err)
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{
		"2026-03-01T10:00:05Z", "2026-03-01T10:00:05.123456789Z", "2026-03-01T12:00:05+02:00",
		"2026-03-01t10:00:05z", "1999-12-31T23:59:60Z",
		// The extremes of RFC 3339: no lower bound but the first
		// microsecond of year 1 (below), no upper bound but Policy.Check.
		"0000-01-01T00:00:00+23:59", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00.000001Z",
		"0001-01-01T00:59:59.9999999+01:00", "9999-12-31T23:59:59.999999999-23:59",
	} {
		if _, err := newest.Parse(s); err != nil && s != "1999-12-31T23:59:60Z" {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	if got, _ := newest.Parse("2026-03-01T12:00:05+02:00"); !got.Equal(at("2026-03-01T10:00:05Z")) {
		t.Errorf("Parse with an offset = %v", got)
	}
	for _, s := range []string{
		"", "yesterday", "2026-03-01", "2026-03-01 10:00:05Z", "2026-03-01T10:00:05", "2026-03-01T10:00:05,5Z",
		"2026-03-01T25:00:05Z", "2026-03-01T10:00:05+24:00", "0001-01-01T00:00:00Z", "1700000000",
		// Within the first microsecond of year 1: Go's zero time (no time)
		// once truncated to Precision, as PostgreSQL stores it.
		"0001-01-01T00:00:00.0000005Z", "0001-01-01T01:00:00.000000999+01:00",
	} {
		if _, err := newest.Parse(s); !errors.Is(err, newest.ErrInvalidTime) {
			t.Errorf("Parse(%q) err = %v, want ErrInvalidTime", s, err)
		}
	}
	for _, v := range []string{`1700000000`, `null`, `"soon"`, `{}`, `["2026-03-01T10:00:05Z"]`} {
		if _, err := newest.ParseJSON([]byte(v)); !errors.Is(err, newest.ErrInvalidTime) {
			t.Errorf("ParseJSON(%s) err = %v, want ErrInvalidTime", v, err)
		}
	}
	if got, err := newest.ParseJSON([]byte(`"2026-03-01T10:00:05Z"`)); err != nil || !got.Equal(at("2026-03-01T10:00:05Z")) {
		t.Errorf("ParseJSON = %v, %v", got, err)
	}
	// Every refusal is a *TimeError, whose text names the value.
	long := strings.Repeat("é", 40)
	for _, c := range []struct {
		err  func() error
		want string
	}{
		{func() error { _, err := newest.Parse("yesterday"); return err }, `"yesterday": not an RFC 3339 date-time`},
		{func() error { _, err := newest.Parse("0001-01-01T00:00:00Z"); return err }, `"0001-01-01T00:00:00Z": not an RFC 3339 date-time (the zero time)`},
		{func() error { _, err := newest.Parse(long); return err }, `"` + long[:62] + `…: not an RFC 3339 date-time`},
		{func() error { _, err := newest.ParseJSON([]byte(`1700000000`)); return err }, `1700000000: not an RFC 3339 date-time (not a JSON string)`},
		{func() error { _, err := newest.ParseJSON([]byte(`"soon"`)); return err }, `"soon": not an RFC 3339 date-time`},
		{func() error { _, err := newest.ParseJSON([]byte(`"0001-01-01T00:00:00Z"`)); return err }, `"0001-01-01T00:00:00Z": not an RFC 3339 date-time (the zero time)`},
	} {
		err := c.err()
		var te *newest.TimeError
		if !errors.As(err, &te) || te.Err != newest.ErrInvalidTime || !te.Time.IsZero() || !te.Bound.IsZero() {
			t.Errorf("%v: want a *TimeError{Err: ErrInvalidTime}", err)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %s", err, c.want)
		}
	}
}

func TestPostgresCondition(t *testing.T) {
	got := newest.PostgresCondition("stored", "observed at", `fe"ature`)
	want := `("stored"."observed at" IS NULL OR (EXCLUDED."observed at" IS NOT NULL AND ("stored"."observed at" < EXCLUDED."observed at"` +
		` OR ("stored"."observed at" = EXCLUDED."observed at" AND "stored"."fe""ature" < EXCLUDED."fe""ature"))))`
	if got != want {
		t.Errorf("PostgresCondition =\n%s\nwant\n%s", got, want)
	}
}

// The SQL condition decides as Decide does, pair by pair, on a real
// PostgreSQL, in the documented statement shape; when it stores nothing,
// the incoming time alone tells the verdict, as PostgresCondition says. On
// its own, selected, the condition is true or false, never NULL.
func TestPostgresConditionAgreesWithSupersedes(t *testing.T) {
	ctx := context.Background()
	conn := connect(t)
	table := "newest_" + strconv.FormatUint(rand.Uint64(), 36)
	if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (id text PRIMARY KEY, observed_at timestamptz, feature bytea NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `DROP TABLE `+table)
	upsert := `INSERT INTO ` + table + ` AS stored (id, observed_at, feature) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET observed_at = EXCLUDED.observed_at, feature = EXCLUDED.feature
		WHERE ` + newest.PostgresCondition("stored", "observed_at", "feature") + ` RETURNING true`
	selected := `SELECT ` + newest.PostgresCondition("stored", "observed_at", "feature") + `
		FROM (VALUES ($1::timestamptz, $2::bytea)) AS stored (observed_at, feature),
			(VALUES ($3::timestamptz, $4::bytea)) AS excluded (observed_at, feature)`
	times := []time.Time{{}, at("2026-03-01T10:00:05Z"), at("2026-03-01T10:00:05.0000004Z"), at("2026-03-01T10:00:05.000001Z"), at("2026-03-01T12:00:09+02:00"),
		at("0000-01-01T00:00:00+23:59"), at("0001-01-01T00:00:00.000001Z"), at("9999-12-31T23:59:59.999999999-23:59")}
	bodies := [][]byte{{}, {0}, {1}, {1, 0}, {0xff}, []byte("a")}
	arg := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	// One batch, run in order: each pair inserts its stored row, upserts
	// the incoming one, and selects the condition on its own.
	var b pgx.Batch
	n := 0
	for _, st := range times {
		for _, sb := range bodies {
			for _, it := range times {
				for _, ib := range bodies {
					n++
					id := strconv.Itoa(n)
					stored := newest.Observation{Time: st, Bytes: sb}
					incoming := newest.Observation{Time: it, Bytes: ib}
					pair := fmt.Sprintf("stored (%v, %x), incoming (%v, %x)", st, sb, it, ib)
					verdict := newest.Decide(stored, incoming)
					want := verdict == newest.Replace
					b.Queue(`INSERT INTO `+table+` VALUES ($1, $2, $3)`, id, arg(st), sb)
					b.Queue(upsert, id, arg(it), ib).QueryRow(func(row pgx.Row) error {
						var wrote bool
						if err := row.Scan(&wrote); err != nil && !errors.Is(err, pgx.ErrNoRows) {
							return err
						}
						if wrote != want {
							t.Errorf("%s: SQL stored = %v, Decide replaces = %v", pair, wrote, want)
						}
						if !wrote && newest.Refused(incoming) != verdict {
							t.Errorf("%s: Refused = %v, Decide = %v", pair, newest.Refused(incoming), verdict)
						}
						return nil
					})
					b.Queue(selected, arg(st), sb, arg(it), ib).QueryRow(func(row pgx.Row) error {
						var cond *bool
						if err := row.Scan(&cond); err != nil {
							return err
						}
						if cond == nil || *cond != want {
							t.Errorf("%s: selected condition = %v, want %v", pair, cond, want)
						}
						return nil
					})
				}
			}
		}
	}
	if err := conn.SendBatch(ctx, &b).Close(); err != nil {
		t.Fatal(err)
	}
}

// connect returns a connection to the test database, closed at the end of
// the test.
func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	url := os.Getenv("GEOIDEM_POSTGRES_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Every time Parse accepts, from the first year of RFC 3339 to its last,
// is stored by PostgreSQL as itself truncated to Precision, and read back
// as a time, never as Go's zero time ("no time"): no lower bound is needed
// for the SQL form. The first microsecond of year 1 does read back as the
// zero time: that is why Parse refuses it.
func TestPostgresKeepsEveryParsedTime(t *testing.T) {
	ctx := context.Background()
	conn := connect(t)
	roundTrip := func(tm time.Time) time.Time {
		var back time.Time
		if err := conn.QueryRow(ctx, `SELECT $1::timestamptz`, tm).Scan(&back); err != nil {
			t.Fatalf("%v: %v", tm, err)
		}
		return back
	}
	for _, s := range []string{
		"0000-01-01T00:00:00+23:59", "0000-01-01T00:00:00Z", "0001-01-01T00:59:59.9999999+01:00",
		"0001-01-01T00:00:00.000001Z", "2026-03-01T10:00:05.123456789Z", "9999-12-31T23:59:59.999999999-23:59",
	} {
		tm, err := newest.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%s): %v", s, err)
		}
		if back := roundTrip(tm); back.IsZero() || !back.Equal(tm.Truncate(newest.Precision)) {
			t.Errorf("%s: PostgreSQL gives back %v, want %v", s, back, tm.Truncate(newest.Precision))
		}
	}
	const first = "0001-01-01T00:00:00.0000005Z"
	if back := roundTrip(at(first)); !back.IsZero() {
		t.Errorf("%s: PostgreSQL gives back %v, not the zero time: Parse need not refuse it", first, back)
	}
	if _, err := newest.Parse(first); !errors.Is(err, newest.ErrInvalidTime) {
		t.Errorf("Parse(%s) = %v, want ErrInvalidTime", first, err)
	}
}

// FromProperties reads the member at the top level of the properties
// object only, by its name decoded (escapes resolved, exact case), and
// refuses what is not one RFC 3339 string.
func TestFromProperties(t *testing.T) {
	t5 := at("2026-03-01T10:00:05Z")
	const member = "observation_time"
	for _, c := range []struct {
		name  string
		props string
		want  time.Time // zero: none
		ok    bool
		err   error // the sentinel, or nil
	}{
		{"nil: a bare geometry", "", time.Time{}, false, nil},
		{"null", ` null `, time.Time{}, false, nil},
		{"empty object", `{}`, time.Time{}, false, nil},
		{"absent", `{"a":1,"b":[{"observation_time":"2026-03-01T10:00:05Z"}]}`, time.Time{}, false, nil},
		{"only in a nested object", `{"x":{"observation_time":"2026-03-01T10:00:05Z"}}`, time.Time{}, false, nil},
		{"present", `{"observation_time":"2026-03-01T10:00:05Z"}`, t5, true, nil},
		{"present after nested values", ` { "a" : {"b":[1,{"c":"}\"]"}],"observation_time":0} , "s":"\"observation_time\":" ,` +
			` "observation_time" : "2026-03-01T12:00:05+02:00" } `, t5, true, nil},
		{"name spelled with escapes", `{"observation\u005ftime":"2026-03-01T10:00:05Z"}`, t5, true, nil},
		{"name with an escaped slash", `{"observation\/time":"x","observation_time":"2026-03-01T10:00:05Z"}`, t5, true, nil},
		{"another case is another member", `{"Observation_Time":"2026-03-01T10:00:05Z"}`, time.Time{}, false, nil},
		{"a longer name", `{"observation_time_":"2026-03-01T10:00:05Z","observation_tim":"x"}`, time.Time{}, false, nil},
		{"value null", `{"observation_time":null}`, time.Time{}, true, newest.ErrInvalidTime},
		{"value a number", `{"observation_time":1700000000}`, time.Time{}, true, newest.ErrInvalidTime},
		{"value an object", `{"observation_time":{"t":"2026-03-01T10:00:05Z"}}`, time.Time{}, true, newest.ErrInvalidTime},
		{"value not RFC 3339", `{"observation_time":"yesterday"}`, time.Time{}, true, newest.ErrInvalidTime},
		{"duplicate", `{"observation_time":"2026-03-01T10:00:05Z","observation_time":"2026-03-01T10:00:05Z"}`, time.Time{}, true, newest.ErrDuplicateMember},
		{"duplicate, once escaped", `{"observation_time":"2026-03-01T10:00:05Z","a":1,"observation\u005Ftime":"2026-03-01T10:00:09Z"}`, time.Time{}, true, newest.ErrDuplicateMember},
		{"other duplicates are not its business", `{"a":1,"a":2,"observation_time":"2026-03-01T10:00:05Z"}`, t5, true, nil},
		{"an array", `[{"observation_time":"2026-03-01T10:00:05Z"}]`, time.Time{}, false, newest.ErrInvalidProperties},
		{"a string", `"observation_time"`, time.Time{}, false, newest.ErrInvalidProperties},
		{"not JSON", `{"observation_time":"2026-03-01T10:00:05Z"`, time.Time{}, false, newest.ErrInvalidProperties},
		{"trailing data", `{} {}`, time.Time{}, false, newest.ErrInvalidProperties},
		{"only spaces", ` `, time.Time{}, false, newest.ErrInvalidProperties},
	} {
		got, ok, err := newest.FromProperties([]byte(c.props), member)
		if !got.Equal(c.want) || ok != c.ok || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
			t.Errorf("%s: FromProperties(%s) = %v, %v, %v; want %v, %v, %v", c.name, c.props, got, ok, err, c.want, c.ok, c.err)
		}
		var te *newest.TimeError
		if isTime := errors.As(err, &te); isTime != (c.err == newest.ErrInvalidTime || c.err == newest.ErrDuplicateMember) {
			t.Errorf("%s: %v: a *TimeError = %v", c.name, err, isTime)
		}
	}
	for _, c := range []struct{ props, member, want string }{
		{`{"a/b~":"soon"}`, "a/b~", `"soon": not an RFC 3339 date-time`},
		{`{"t":1,"t":2}`, "t", `"t": the member appears more than once`},
	} {
		if _, _, err := newest.FromProperties([]byte(c.props), c.member); err == nil || err.Error() != c.want {
			t.Errorf("FromProperties(%s, %q) = %v, want %s", c.props, c.member, err, c.want)
		}
	}
}

// fromPropertiesRef is FromProperties built on encoding/json: a decoder
// reads the top-level members one by one, with their names decoded as
// encoding/json decodes them.
func fromPropertiesRef(props []byte, member string) (time.Time, bool, error) {
	if len(props) == 0 {
		return time.Time{}, false, nil
	}
	if !json.Valid(props) {
		return time.Time{}, false, newest.ErrInvalidProperties
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	dec.UseNumber() // 1E1000 is a number, not an error
	tok, err := dec.Token()
	if err != nil {
		panic(err) // json.Valid said it is valid
	}
	if tok == nil {
		return time.Time{}, false, nil
	}
	if tok != json.Delim('{') {
		return time.Time{}, false, newest.ErrInvalidProperties
	}
	var values []json.RawMessage
	for dec.More() {
		name, _ := dec.Token()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			panic(err) // json.Valid said it is valid
		}
		if name.(string) == member {
			values = append(values, v)
		}
	}
	switch len(values) {
	case 0:
		return time.Time{}, false, nil
	case 1:
		t, err := newest.ParseJSON(values[0])
		return t, true, err
	}
	return time.Time{}, true, newest.ErrDuplicateMember
}

// FromProperties decides as encoding/json does (fromPropertiesRef): the
// same time, presence, and reason to refuse.
func FuzzFromProperties(f *testing.F) {
	for _, props := range []string{
		``, `null`, `{}`, `[]`, `1`, `"s"`, `{"observation_time":"2026-03-01T10:00:05Z"}`,
		`{"observation\u005ftime":"2026-03-01T10:00:05.5+01:00"}`, `{"observation_time":null}`,
		`{"a":{"observation_time":"2026-03-01T10:00:05Z"},"observation_time":"2026-03-01T10:00:09Z"}`,
		`{"observation_time":"2026-03-01T10:00:05Z","observation_time":1}`, `{"a\ud800":1,"a\ufffd":2}`,
		"{\"a\xff\":1}", `{"\ud83d\ude00":"x","\ud83d":"y"}`, `{"a":[1,{"b":"\"}"}],"t":"2026-03-01t10:00:05z"}`,
		`{ "t" : "0001-01-01T00:00:00Z" }`, `1E1000`, `{"t":1E1000}`, `{"t":"9999-12-31T23:59:59.999999999-23:59"}`, `{"\"":1,"\\":2,"\/":3}`,
	} {
		for _, member := range []string{"observation_time", "a", "a\ufffd", "t", "😀", "\"", "\\", "/", ""} {
			f.Add([]byte(props), member)
		}
	}
	f.Fuzz(func(t *testing.T, props []byte, member string) {
		got, ok, err := newest.FromProperties(props, member)
		want, wantOK, wantErr := fromPropertiesRef(props, member)
		if !got.Equal(want) || got.Location().String() != want.Location().String() || ok != wantOK {
			t.Fatalf("FromProperties(%q, %q) = %v, %v; encoding/json: %v, %v", props, member, got, ok, want, wantOK)
		}
		for _, reason := range []error{newest.ErrInvalidTime, newest.ErrDuplicateMember, newest.ErrInvalidProperties} {
			if errors.Is(err, reason) != errors.Is(wantErr, reason) {
				t.Fatalf("FromProperties(%q, %q) err = %v; encoding/json: %v", props, member, err, wantErr)
			}
		}
		if (err == nil) != (wantErr == nil) || errors.Is(wantErr, newest.ErrInvalidTime) && err.Error() != wantErr.Error() {
			t.Fatalf("FromProperties(%q, %q) err = %v; encoding/json: %v", props, member, err, wantErr)
		}
	})
}

// Reading the time costs no allocation when the member is absent, however
// many members and nesting levels the properties have, and no recursion.
func TestFromPropertiesBoundedCost(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 1000 {
		fmt.Fprintf(&b, `"m\u00e9%d":{"observation_time":[%d,"x"]},`, i, i)
	}
	b.WriteString(`"deep":` + strings.Repeat(`[`, 9000) + strings.Repeat(`]`, 9000) + `}`)
	props := []byte(b.String())
	if allocs := testing.AllocsPerRun(20, func() {
		if _, ok, err := newest.FromProperties(props, "observation_time"); ok || err != nil {
			t.Fatalf("FromProperties = %v, %v; want absent", ok, err)
		}
	}); allocs != 0 && !raceEnabled {
		t.Errorf("FromProperties allocates %v times per call without the member, want 0", allocs)
	}
}
