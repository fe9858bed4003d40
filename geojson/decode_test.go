package geojson

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twpayne/go-geom"
)

// decode returns the features of DecodeDocument, which most tests read.
func decode(data []byte, opts Options) ([]RawFeature, error) {
	doc, err := DecodeDocument(data, opts)
	if err != nil {
		return nil, err
	}
	return doc.Features, nil
}

func TestDecodeFeatureCollection(t *testing.T) {
	doc := `{"type":"FeatureCollection","features":[
	  {"type":"Feature","id":7,"properties":{"name":"a","n":1.5,"tags":["x"]},"bbox":[0,0,4,4],
	   "geometry":{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]],[[1,1],[1,2],[2,2],[1,1]]]}},
	  {"type":"Feature","id":"b","properties":null,"geometry":null},
	  {"type":"Feature","properties":{},"geometry":{"type":"GeometryCollection","geometries":[
	    {"type":"Point","coordinates":[1,2,3]},
	    {"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[2,2],[3,2],[3,3],[2,2]]]]},
	    {"type":"MultiLineString","coordinates":[[[0,0],[1,1]],[[2,2],[3,3],[4,4]]]},
	    {"type":"MultiPoint","coordinates":[[0,0],[1,1]]},
	    {"coordinates":[[0,0],[1,1]],"type":"LineString"}]}}]}`
	fs, err := decode([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 3 {
		t.Fatalf("got %d features, want 3", len(fs))
	}
	if fs[0].ID != json.Number("7") || fs[1].ID != "b" || fs[2].ID != nil {
		t.Errorf("ids = %#v, %#v, %#v", fs[0].ID, fs[1].ID, fs[2].ID)
	}
	var props map[string]any
	if err := json.Unmarshal(fs[0].Properties, &props); err != nil || props["name"] != "a" || props["n"] != 1.5 || len(props["tags"].([]any)) != 1 {
		t.Errorf("properties = %s: %#v, %v", fs[0].Properties, props, err)
	}
	if string(fs[1].Properties) != "null" || fs[1].Geometry != nil {
		t.Errorf("null properties and geometry decoded as %q, %#v", fs[1].Properties, fs[1].Geometry)
	}
	if len(fs[0].BBox) != 4 || fs[0].BBox[2] != 4 {
		t.Errorf("bbox = %v", fs[0].BBox)
	}
	p, ok := fs[0].Geometry.(*geom.Polygon)
	if !ok {
		t.Fatalf("geometry is %T, want *geom.Polygon", fs[0].Geometry)
	}
	if p.Layout() != geom.XY || p.NumLinearRings() != 2 || p.LinearRing(1).NumCoords() != 4 {
		t.Errorf("polygon = %v layout %v", p.Coords(), p.Layout())
	}
	if got := p.LinearRing(0).Coord(2); got[0] != 4 || got[1] != 4 {
		t.Errorf("shell vertex 2 = %v", got)
	}
	// Appending to one geometry's coordinates must not touch another's.
	_ = append(p.FlatCoords(), 99, 99)
	gc := fs[2].Geometry.(*geom.GeometryCollection)
	if gc.NumGeoms() != 5 {
		t.Fatalf("collection has %d geometries", gc.NumGeoms())
	}
	if pt := gc.Geom(0).(*geom.Point); pt.Layout() != geom.XYZ || pt.Z() != 3 || pt.X() != 1 {
		t.Errorf("point = %v %v", pt.Coords(), pt.Layout())
	}
	if mp := gc.Geom(1).(*geom.MultiPolygon); mp.NumPolygons() != 2 || mp.Polygon(1).LinearRing(0).Coord(1)[0] != 3 {
		t.Errorf("multipolygon = %v", mp.Coords())
	}
	if ml := gc.Geom(2).(*geom.MultiLineString); ml.NumLineStrings() != 2 || ml.LineString(1).NumCoords() != 3 {
		t.Errorf("multilinestring = %v", ml.Coords())
	}
	if mpt := gc.Geom(3).(*geom.MultiPoint); mpt.NumPoints() != 2 {
		t.Errorf("multipoint = %v", mpt.Coords())
	}
	if ls := gc.Geom(4).(*geom.LineString); ls.NumCoords() != 2 || ls.Coord(1)[0] != 1 {
		t.Errorf("linestring = %v", ls.Coords())
	}
}

func TestDecodeBareGeometryAndMixedDimensions(t *testing.T) {
	fs, err := decode([]byte(`{"type":"LineString","coordinates":[[0,0,5],[1,1]]}`), Options{MixedDimensions: MixedDimensionsDropZ})
	if err != nil {
		t.Fatal(err)
	}
	ls := fs[0].Geometry.(*geom.LineString)
	if ls.Layout() != geom.XY || ls.Coord(0)[0] != 0 || ls.Coord(1)[1] != 1 {
		t.Errorf("normalised linestring = %v %v", ls.Coords(), ls.Layout())
	}
	if fs[0].ID != nil || fs[0].Properties != nil {
		t.Errorf("bare geometry got id %v properties %v", fs[0].ID, fs[0].Properties)
	}
}

func TestDecodeRejectsInvalid(t *testing.T) {
	fs, err := decode([]byte(poly(`[[0,0],[2,2],[2,0],[0,2],[0,0]]`)), Options{})
	var verr *ValidationError
	if !errors.As(err, &verr) || fs != nil {
		t.Fatalf("decode(bow tie) = %v, %v", fs, err)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, doc := range []string{``, ` `, `{`, `{"type":}`, `{"type":"Point",}`, `[1,]`, `{"a":1}x`, `{"a":01}`,
		`{"a":1.}`, `{"a":-}`, `{"a":tru}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12"}`, `{'a':1}`, "\xef\xbb\xbf{}", `{"a" 1}`, `{"a":1 "b":2}`} {
		err := Validate([]byte(doc), Options{})
		var serr *SyntaxError
		if !errors.As(err, &serr) {
			t.Errorf("Validate(%q) = %v, want a *SyntaxError", doc, err)
		}
	}
	// Malformed JSON wins over earlier GeoJSON problems.
	err := Validate([]byte(`{"type":"Nope","coordinates":[1,2]`), Options{})
	var serr *SyntaxError
	if !errors.As(err, &serr) {
		t.Errorf("got %v, want a *SyntaxError", err)
	}
}

func TestNumbers(t *testing.T) {
	// The fast path and strconv must agree on every number.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var s string
		switch rng.IntN(4) {
		case 0:
			s = strconvFormat(rng.Float64()*360-180, 'f', rng.IntN(18))
		case 1:
			s = strconvFormat(rng.NormFloat64()*1e10, 'g', -1)
		case 2:
			s = strconvFormat(rng.Float64()*1e-5, 'e', rng.IntN(20))
		default:
			s = "0.0000" + strconv.Itoa(rng.IntN(1<<30)) + strconv.Itoa(rng.IntN(1<<30))
		}
		p := &parser{data: []byte(s)}
		got, _ := p.num()
		want := mustParseFloat(t, s)
		if got != want || p.i != len(s) {
			t.Fatalf("num(%q) = %v (read %d bytes), want %v", s, got, p.i, want)
		}
	}
}

func TestProblemCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"MultiPoint","coordinates":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`[500,0]`)
	}
	b.WriteString(`]}`)
	err := Validate([]byte(b.String()), Options{MaxProblems: 10})
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Violations) != 10 || !verr.Truncated {
		t.Fatalf("got %v", err)
	}
	if verr.Violations[3].Pointer != "/coordinates/3" {
		t.Errorf("problem 3 at %q", verr.Violations[3].Pointer)
	}
	if err := Validate([]byte(b.String()), Options{}); !errors.As(err, &verr) || len(verr.Violations) != 50 || verr.Truncated {
		t.Fatalf("default cap: got %d problems, truncated %v", len(verr.Violations), verr.Truncated)
	}
}

func TestPointerEscaping(t *testing.T) {
	err := Validate([]byte(`{"type":"Feature","geometry":null,"properties":{"a/b~c":{"x":1,"x":2}}}`), Options{})
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Violations[0].Pointer != "/properties/a~1b~0c/x" {
		t.Fatalf("got %v", err)
	}
}

// TestHostileNesting checks that deep nesting is cut off by the depth
// limit instead of recursing, for arrays, objects and collections.
func TestHostileNesting(t *testing.T) {
	for _, doc := range []string{
		`{"type":"Feature","geometry":null,"properties":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `}`,
		`{"a":` + strings.Repeat(`{"a":`, 100000) + `1` + strings.Repeat(`}`, 100001),
		strings.Repeat(`{"type":"GeometryCollection","geometries":[`, 10000),
		`{"type":"Point","coordinates":` + strings.Repeat(`[`, 100000),
	} {
		err := Validate([]byte(doc), Options{})
		var verr *ValidationError
		if !errors.As(err, &verr) {
			t.Fatalf("got %v, want a limit problem", err)
		}
		if r := verr.Violations[len(verr.Violations)-1].Rule; r != RuleLimitDepth && r != RuleLimitCollectionDepth {
			t.Errorf("last problem %v, want a depth limit", verr.Violations[len(verr.Violations)-1])
		}
	}
}

// TestConcurrentValidate runs validations in parallel, sharing the pool
// of parsers and the sweep buffers they hold (meaningful under -race).
func TestConcurrentValidate(t *testing.T) {
	docs := []struct {
		doc   string
		valid bool
	}{
		{string(benchPolygon(500, true)), true},
		{poly(sq, `[[1,1],[1,2],[2,2],[1,1]]`), true},
		{poly(`[[0,0],[2,2],[2,0],[0,2],[0,0]]`), false},
		{`{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[1,1],[2,1],[2,2],[1,1]]]]}`, false},
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				d := docs[(g+i)%len(docs)]
				if err := Validate([]byte(d.doc), Options{}); (err == nil) != d.valid {
					t.Errorf("doc %d: got %v, want valid=%v", (g+i)%len(docs), err, d.valid)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestNumbersNearFastPathLimits: numbers at the limits of num's fast path
// (15 integer digits, 19 digits, 2^53, leading zeros, a sign, an
// exponent) read as strconv reads them, and the reading stops at the
// byte after the number.
func TestNumbersNearFastPathLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		if n > 1 && b[0] == '0' {
			b[0] = '1' + byte(rng.IntN(9))
		}
		return string(b)
	}
	fixed := []string{"0", "-0", "0.0", "-0.0", "9007199254740991", "9007199254740992", "9007199254740993",
		"900719925474099.3", "0.9007199254740993", "1.0000000000000000001", "123456789012345.6789",
		"0.00000000000000000001", "1e5", "1.5E-3", "-12.5e+2", "999999999999999.9"}
	var cases []string
	cases = append(cases, fixed...)
	for range 20000 {
		s := digits(1 + rng.IntN(17))
		if rng.IntN(2) == 0 {
			s += "." + digits(1+rng.IntN(22))
			if rng.IntN(3) == 0 {
				s = "0." + strings.Repeat("0", rng.IntN(8)) + digits(1+rng.IntN(12))
			}
		}
		if rng.IntN(5) == 0 {
			s += "e" + strconv.Itoa(rng.IntN(40)-20)
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		for _, tail := range []string{"", "]", ",", " "} {
			p := &parser{data: []byte(s + tail)}
			got, raw := p.num()
			want := mustParseFloat(t, s)
			if math.Float64bits(got) != math.Float64bits(want) || p.i != len(s) || string(raw) != s {
				t.Fatalf("num(%q) = %v, %q (read %d bytes), want %v, %q", s+tail, got, raw, p.i, want, s)
			}
		}
	}
}

// TestDecodedPositionsOutliveThePool: the positions of decoded geometries
// are the caller's. Rejected decodes, Validate and other decodes of
// bodies of every size, after and between, on the same pooled parsers,
// never change them.
func TestDecodedPositionsOutliveThePool(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	circle := func(n int, r float64) []byte {
		var b strings.Builder
		b.WriteString(`{"type":"Polygon","coordinates":[[`)
		for i := range n {
			a := 2 * math.Pi * float64(i) / float64(n)
			b.WriteString("[" + strconv.FormatFloat(r*math.Cos(a), 'g', -1, 64) + "," + strconv.FormatFloat(r*math.Sin(a), 'g', -1, 64) + "],")
		}
		b.WriteString(`[` + strconv.FormatFloat(r, 'g', -1, 64) + `,0]]]}`)
		return []byte(b.String())
	}
	overlapping := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"type":"MultiPolygon","coordinates":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			x := strconv.Itoa(i % 50)
			x2 := strconv.Itoa(i%50 + 2)
			b.WriteString("[[[" + x + ",0],[" + x2 + ",0],[" + x + ",2],[" + x + ",0]]]")
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	type kept struct {
		g    geom.T
		flat []float64
	}
	var all []kept
	for round := range 200 {
		n := 3 + rng.IntN(2000)
		switch rng.IntN(4) {
		case 0:
			doc, err := DecodeDocument(circle(n, 1+float64(round%80)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			g := doc.Features[0].Geometry
			all = append(all, kept{g, append([]float64(nil), g.FlatCoords()...)})
		case 1:
			fs, err := decode(circle(n, 1+float64(round%80)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			g := fs[0].Geometry
			all = append(all, kept{g, append([]float64(nil), g.FlatCoords()...)})
		case 2:
			if _, err := DecodeDocument(overlapping(n), Options{}); err == nil {
				t.Fatal("overlapping triangles decoded")
			}
		case 3:
			if err := Validate(overlapping(n), Options{}); err == nil {
				t.Fatal("overlapping triangles valid")
			}
		}
	}
	for i, k := range all {
		if got := k.g.FlatCoords(); !slices.Equal(got, k.flat) {
			t.Fatalf("geometry %d of %d: its positions changed after later calls", i, len(all))
		}
	}
}
