package geojson

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// answerAlloc returns the bytes allocated by what the middleware does with
// body, as bench section 6 measures it (internal/testkit AllocBytes): one
// RequestValidator.DecodeRequest call and, for a *ValidationError, its
// problem document; cold, with the pools emptied, and warm.
func answerAlloc(t *testing.T, body []byte) (cold, warm uint64) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/geo+json")
	cold, warm, err = testkit.AllocBytes(func() error {
		_, err := RequestValidator{}.DecodeRequest(r, body)
		var verr *ValidationError
		if errors.As(err, &verr) {
			if n := len(verr.ProblemJSON()); n > maxProblemDocumentBytes {
				return fmt.Errorf("problem document of %d bytes, over %d", n, maxProblemDocumentBytes)
			}
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	return cold, warm
}

// TestHostileAllocationPerByte holds SECURITY.md's bound on every hostile
// body of bench section 6: through RequestValidator.DecodeRequest and the
// problem document, a 1 MiB problem bomb, 20,000 and 50,000 holes, 1 MiB
// of empty positions, empty LineStrings or rings, empty Polygons,
// overlapping triangles or null-geometry Features, and a circle at scale
// 1e-200 allocate at most 5×
// the bytes per input byte of a valid circle of their size, cold and warm.
func TestHostileAllocationPerByte(t *testing.T) {
	const size = 1 << 20
	const bound = 5.0
	perB := func(a uint64, body []byte) float64 { return float64(a) / float64(len(body)) }
	type perByte struct{ cold, warm float64 }
	circles := map[int]perByte{} // the circle of each size, measured once
	circleOf := func(n int) perByte {
		if c, ok := circles[n]; ok {
			return c
		}
		body := testkit.CircleOfSize(n, 1)
		cc, cw := answerAlloc(t, body)
		c := perByte{perB(cc, body), perB(cw, body)}
		t.Logf("circle of %d bytes: cold %.2f B/B, warm %.2f B/B", len(body), c.cold, c.warm)
		circles[n] = c
		return c
	}
	// The bodies of about size bytes are held against the circle of size
	// bytes, as in bench section 6; the others against one of their own
	// length.
	for _, c := range []struct {
		name   string
		body   []byte
		circle int // size of the circle: len(body) when 0
	}{
		{"problem document", testkit.ProblemBomb(size, 100), size},
		{"20,000 holes", testkit.Holes(20_000), 0},
		{"50,000 holes", testkit.Holes(50_000), 0},
		{"MultiPoint of []", testkit.EmptyPositions(size), size},
		{"MultiLineString of []", testkit.EmptyLines(size), size},
		{"Polygon of [] rings", testkit.EmptyRings(size), size},
		{"MultiPolygon of [[]]", testkit.EmptyPolygons(size), size},
		{"overlapping triangles", testkit.Triangles(size), size},
		{"FeatureCollection of null-geometry Features", testkit.NullFeatures(size), size},
		{"circle of 21,000 vertices at 1e-200", testkit.Circle(21_000, 1e-200), 0},
	} {
		if c.circle == 0 {
			c.circle = len(c.body)
		}
		circle := circleOf(c.circle)
		hc, hw := answerAlloc(t, c.body)
		rc, rw := perB(hc, c.body)/circle.cold, perB(hw, c.body)/circle.warm
		t.Logf("%s, %d bytes: cold %.2f B/B (%.1f×), warm %.2f B/B (%.1f×)", c.name, len(c.body), perB(hc, c.body), rc, perB(hw, c.body), rw)
		if rc > bound || rw > bound {
			t.Errorf("%s: %.1f× (cold) and %.1f× (warm) the bytes allocated per input byte of a circle of its size, want at most %v×",
				c.name, rc, rw, bound)
		}
	}
}

// TestUnlistedProblemsAllocateNothing: past the Options.MaxProblems
// problems listed, a problem is counted, never formatted, so a body with
// 20,000 problems makes as many allocations as one with 200. Counts are
// warm (the fewest of eight calls, the pooled parser's scratch grown), so
// the collector is held off while counting: a collection empties the
// pool, and the scratch a larger body regrows would count as problems.
func TestUnlistedProblemsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("warm allocations are not counted under the race detector (see raceEnabled)")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	mallocs := func(body []byte) uint64 {
		least := uint64(math.MaxUint64)
		for range 8 {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			err := Validate(body, Options{})
			runtime.ReadMemStats(&m1)
			var verr *ValidationError
			if !errors.As(err, &verr) || !verr.Truncated {
				t.Fatalf("Validate: %v, want a truncated *ValidationError", err)
			}
			least = min(least, m1.Mallocs-m0.Mallocs)
		}
		return least
	}
	body := func(head, unit, tail string, n int) []byte {
		b := []byte(head)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, unit...)
		}
		return append(b, tail...)
	}
	for _, c := range []struct{ name, head, unit, tail string }{
		{"empty positions", `{"type":"MultiPoint","coordinates":[`, `[]`, `]}`},
		{"short positions", `{"type":"MultiPoint","coordinates":[`, `[1]`, `]}`},
		{"positions of strings", `{"type":"MultiPoint","coordinates":[`, `["a","b"]`, `]}`},
		{"longitudes out of range", `{"type":"MultiPoint","coordinates":[`, `[200,0]`, `]}`},
		{"infinite numbers", `{"type":"MultiPoint","coordinates":[`, `[1e999,0]`, `]}`},
		{"short LineStrings", `{"type":"MultiLineString","coordinates":[`, `[[0,0]]`, `]}`},
		{"short rings", `{"type":"Polygon","coordinates":[`, `[[0,0],[1,1]]`, `]}`},
		{"collection members that are numbers", `{"type":"GeometryCollection","geometries":[`, `1`, `]}`},
		{"features that are Points", `{"type":"FeatureCollection","features":[`, `{"type":"Point"}`, `]}`},
		{"unknown types", `{"type":"GeometryCollection","geometries":[`, `{"type":"point"}`, `]}`},
	} {
		few, many := mallocs(body(c.head, c.unit, c.tail, 200)), mallocs(body(c.head, c.unit, c.tail, 20_000))
		if many > few {
			t.Errorf("%s: 20,000 problems make %d allocations, 200 make %d: unlisted problems allocate", c.name, many, few)
		}
	}
}

// TestNumberOverflowWithoutStrconv: the parser's own overflow test, which
// spares strconv's allocating range error, agrees with strconv.ParseFloat
// around the float64 limit.
func TestNumberOverflowWithoutStrconv(t *testing.T) {
	for _, s := range []string{
		"1e308", "1e309", "-1e309", "1e999", "1.7976931348623157e308", "1.7976931348623158e308", "1.797693134862315807e308",
		"1.7976931348623159e308", "1.79769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792e308",
		"1.79769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791e308",
		"1.797693134862315807937289714053034150799341327100378269361737789804449682927647509466490179775872070963302864166928879109465555478519404026306574886715058206819089020007083836762738548458177115317644757302700698555713669596228429148198608349364752927190741684443655107043427115596995080930428801779041744977920000e308",
		"17976931348623158079372897140530341507993413271003782693617377898044496829276475094664901797758720709633028641669288791094655554785194040263065748867150582068190890200070838367627385484581771153176447573027006985557136695962284291481986083493647529271907416844436551070434271155969950809304288017790417449779",
		"179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792",
		"0.0017976931348623159e311", "17976931348623159e292", "-17976931348623159e292", "1e-999", "0e999", "0.0e400",
	} {
		want, _ := strconv.ParseFloat(s, 64)
		p := &parser{data: []byte(s)}
		got, _ := p.num()
		if got != want {
			t.Errorf("%s: %v, strconv.ParseFloat %v", s, got, want)
		}
	}
}

// TestEightDigits checks the eight-digits-at-once conversion against
// strconv on every position of a digit and on non-digits.
func TestEightDigits(t *testing.T) {
	for _, s := range []string{"00000000", "12345678", "99999999", "98765432", "10000001", "1234567a", "/2345678", ":2345678", "1234 678", "12345678"} {
		v, ok := eightDigits(binary.LittleEndian.Uint64([]byte(s)))
		want, err := strconv.ParseUint(s, 10, 64)
		if ok != (err == nil) || (ok && v != want) {
			t.Errorf("%q: %d %v, want %d %v", s, v, ok, want, err == nil)
		}
	}
	for _, s := range []string{"10.987654321", "-0.12345678901234567890123", "0.000000001234567891", "123456789.123456789123456789", "1.00000000000000000001e5"} {
		want, _ := strconv.ParseFloat(s, 64)
		p := &parser{data: []byte(s)}
		if got, _ := p.num(); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
}
