package newest_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
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
		if got := newest.Supersedes(c.stored, c.incoming); got != (c.want == replace) {
			t.Errorf("%s: Supersedes = %v, want %v", c.name, got, c.want == replace)
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
			if newest.Supersedes(kept, obs[i]) {
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

func TestParse(t *testing.T) {
	for _, s := range []string{
		"2026-03-01T10:00:05Z", "2026-03-01T10:00:05.123456789Z", "2026-03-01T12:00:05+02:00",
		"2026-03-01t10:00:05z", "1999-12-31T23:59:60Z",
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
}

func TestPostgresCondition(t *testing.T) {
	got := newest.PostgresCondition("stored", "observed at", `fe"ature`)
	want := `("stored"."observed at" IS NULL OR (EXCLUDED."observed at" IS NOT NULL AND ("stored"."observed at" < EXCLUDED."observed at"` +
		` OR ("stored"."observed at" = EXCLUDED."observed at" AND "stored"."fe""ature" < EXCLUDED."fe""ature"))))`
	if got != want {
		t.Errorf("PostgresCondition =\n%s\nwant\n%s", got, want)
	}
}

// The SQL condition decides as Supersedes does, pair by pair, on a real
// PostgreSQL, in the documented statement shape; when it stores nothing,
// the incoming time alone tells the verdict, as PostgresCondition says. On
// its own, selected, the condition is true or false, never NULL.
func TestPostgresConditionAgreesWithSupersedes(t *testing.T) {
	url := os.Getenv("GEOIDEM_POSTGRES_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	defer conn.Close(ctx)
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
	times := []time.Time{{}, at("2026-03-01T10:00:05Z"), at("2026-03-01T10:00:05.0000004Z"), at("2026-03-01T10:00:05.000001Z"), at("2026-03-01T12:00:09+02:00")}
	bodies := [][]byte{{}, {0}, {1}, {1, 0}, {0xff}, []byte("a")}
	arg := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	n := 0
	for _, st := range times {
		for _, sb := range bodies {
			for _, it := range times {
				for _, ib := range bodies {
					n++
					id := strconv.Itoa(n)
					if _, err := conn.Exec(ctx, `INSERT INTO `+table+` VALUES ($1, $2, $3)`, id, arg(st), sb); err != nil {
						t.Fatal(err)
					}
					var stored bool
					err := conn.QueryRow(ctx, upsert, id, arg(it), ib).Scan(&stored)
					if err != nil && !errors.Is(err, pgx.ErrNoRows) {
						t.Fatal(err)
					}
					incoming := newest.Observation{Time: it, Bytes: ib}
					verdict := newest.Decide(newest.Observation{Time: st, Bytes: sb}, incoming)
					want := verdict == newest.Replace
					if stored != want {
						t.Errorf("stored (%v, %x), incoming (%v, %x): SQL stored = %v, Supersedes = %v", st, sb, it, ib, stored, want)
					}
					if !stored && newest.Refused(incoming) != verdict {
						t.Errorf("stored (%v, %x), incoming (%v, %x): Refused = %v, Decide = %v", st, sb, it, ib, newest.Refused(incoming), verdict)
					}
					var cond *bool
					if err := conn.QueryRow(ctx, selected, arg(st), sb, arg(it), ib).Scan(&cond); err != nil {
						t.Fatal(err)
					}
					if cond == nil || *cond != want {
						t.Errorf("stored (%v, %x), incoming (%v, %x): selected condition = %v, want %v", st, sb, it, ib, cond, want)
					}
				}
			}
		}
	}
}
