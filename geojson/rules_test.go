package geojson

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

const sq = `[[0,0],[4,0],[4,4],[0,4],[0,0]]`

func pt2(s string) string { return `{"type":"Point","coordinates":` + s + `}` }
func poly(rings ...string) string {
	return `{"type":"Polygon","coordinates":[` + strings.Join(rings, ",") + `]}`
}
func feature(geom string, extra string) string {
	return `{"type":"Feature","geometry":` + geom + `,"properties":{}` + extra + `}`
}

// ruleCases has, for every rule, at least one document that breaks it
// (rule and pointer set) and one close to it that is valid (rule empty).
var ruleCases = []struct {
	name    string
	doc     string
	opts    Options
	rule    string
	pointer string
}{
	{"point", pt2(`[1,2]`), Options{}, "", ""},
	{"root not object", `[1,2]`, Options{}, RuleRootNotObject, ""},
	{"root string", `"Point"`, Options{}, RuleRootNotObject, ""},

	{"distinct members", `{"type":"Feature","geometry":null,"properties":{"a":1,"b":{"a":2}}}`, Options{}, "", ""},
	{"duplicate member", `{"type":"Feature","geometry":null,"properties":{"a":1,"a":2}}`, Options{}, RuleDuplicateMember, "/properties/a"},
	{"duplicate escaped member", `{"type":"Point","coordinates":[1,2],"\u0074ype":"Point"}`, Options{}, RuleDuplicateMember, "/type"},
	{"duplicate in a large object", `{"type":"Feature","geometry":null,"properties":{` + manyMembers(40) + `,"m7":0}}`, Options{}, RuleDuplicateMember, "/properties/m7"},
	{"many distinct members", `{"type":"Feature","geometry":null,"properties":{` + manyMembers(40) + `}}`, Options{}, "", ""},

	{"valid UTF-8 and surrogate pair", `{"type":"Feature","geometry":null,"properties":{"n":"Zürich \ud83d\ude00"}}`, Options{}, "", ""},
	{"invalid UTF-8", "{\"type\":\"Feature\",\"geometry\":null,\"properties\":{\"n\":\"\xff\"}}", Options{}, RuleInvalidUTF8, "/properties/n"},
	{"lone surrogate", `{"type":"Feature","geometry":null,"properties":{"n":"\ud800"}}`, Options{}, RuleInvalidUTF8, "/properties/n"},

	{"large number", `{"type":"Feature","geometry":null,"properties":{"n":1e308}}`, Options{}, "", ""},
	{"number too large", `{"type":"Feature","geometry":null,"properties":{"n":-1e309}}`, Options{}, RuleNumberTooLarge, "/properties/n"},
	{"missing type", `{"coordinates":[1,2]}`, Options{}, RuleMissingMember, ""},
	{"type not string", `{"type":{}}`, Options{}, RuleWrongType, "/type"},
	{"unknown type", `{"type":"Circle","coordinates":[1,2]}`, Options{}, RuleUnknownType, "/type"},
	{"type wrong case", `{"type":"point","coordinates":[1,2]}`, Options{}, RuleUnknownType, "/type"},
	{"member name wrong case", `{"type":"Point","Coordinates":[1,2]}`, Options{}, RuleMissingMember, ""},

	{"feature", feature(pt2(`[1,2]`), `,"id":"a"`), Options{}, "", ""},
	{"feature numeric id", feature(pt2(`[1,2]`), `,"id":12345678901234567890`), Options{}, "", ""},
	{"feature null geometry and properties", `{"type":"Feature","geometry":null,"properties":null}`, Options{}, "", ""},
	{"feature without geometry", `{"type":"Feature","properties":{}}`, Options{}, RuleMissingMember, ""},
	{"feature without properties", `{"type":"Feature","geometry":null}`, Options{}, RuleMissingMember, ""},
	{"feature geometry string", `{"type":"Feature","geometry":"x","properties":{}}`, Options{}, RuleWrongType, "/geometry"},
	{"feature properties array", `{"type":"Feature","geometry":null,"properties":[]}`, Options{}, RuleWrongType, "/properties"},
	{"feature id object", feature("null", `,"id":{}`), Options{}, RuleWrongType, "/id"},
	{"feature id bool", feature("null", `,"id":true`), Options{}, RuleWrongType, "/id"},
	{"feature geometry is a feature", feature(feature("null", ""), ""), Options{}, RuleUnexpectedType, "/geometry"},

	{"feature collection", `{"type":"FeatureCollection","features":[` + feature("null", "") + `]}`, Options{}, "", ""},
	{"empty feature collection", `{"type":"FeatureCollection","features":[]}`, Options{}, "", ""},
	{"feature collection without features", `{"type":"FeatureCollection"}`, Options{}, RuleMissingMember, ""},
	{"features object", `{"type":"FeatureCollection","features":{}}`, Options{}, RuleWrongType, "/features"},
	{"features holds a geometry", `{"type":"FeatureCollection","features":[` + pt2(`[1,2]`) + `]}`, Options{}, RuleUnexpectedType, "/features/0"},
	{"features holds a number", `{"type":"FeatureCollection","features":[1]}`, Options{}, RuleWrongType, "/features/0"},
	{"problem deep in a collection", `{"type":"FeatureCollection","features":[` + feature("null", "") + `,` + feature(`{"type":"LineString","coordinates":[[0,0],[1,1]]}`, "") + `,` + feature("null", "") + `,` + feature(poly(`[[0,0],[4,0],[4,4],[0,4],[0,0.5]]`), "") + `]}`, Options{}, RuleRingNotClosed, "/features/3/geometry/coordinates/0"},

	{"geometry collection", `{"type":"GeometryCollection","geometries":[` + pt2(`[1,2]`) + `]}`, Options{}, "", ""},
	{"empty geometry collection", `{"type":"GeometryCollection","geometries":[]}`, Options{}, "", ""},
	{"geometry collection without geometries", `{"type":"GeometryCollection"}`, Options{}, RuleMissingMember, ""},
	{"geometries holds false", `{"type":"GeometryCollection","geometries":[false]}`, Options{}, RuleWrongType, "/geometries/0"},
	{"geometries holds a feature", `{"type":"GeometryCollection","geometries":[` + feature("null", "") + `]}`, Options{}, RuleUnexpectedType, "/geometries/0"},
	{"nested collections within limit", nestGC(3), Options{MaxCollectionDepth: 3}, "", ""},
	{"nested collections over limit", nestGC(4), Options{MaxCollectionDepth: 3}, RuleLimitCollectionDepth, "/geometries/0/geometries/0/geometries/0/geometries"},

	{"coordinates on a feature", feature("null", `,"coordinates":[1,2]`), Options{}, RuleForbiddenMember, "/coordinates"},
	{"features on a feature", feature("null", `,"features":[]`), Options{}, RuleForbiddenMember, "/features"},
	{"geometry on a geometry", `{"type":"Point","coordinates":[1,2],"geometry":null}`, Options{}, RuleForbiddenMember, "/geometry"},
	{"properties on a collection", `{"type":"FeatureCollection","features":[],"properties":{}}`, Options{}, RuleForbiddenMember, "/properties"},
	{"geometries on a point", `{"type":"Point","coordinates":[1,2],"geometries":[]}`, Options{}, RuleForbiddenMember, "/geometries"},
	{"foreign members", `{"type":"Point","coordinates":[1,2],"title":"x","extra":{"coordinates":"anything"}}`, Options{}, "", ""},

	{"crs84", `{"type":"Point","coordinates":[1,2],"crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:OGC:1.3:CRS84"}}}`, Options{}, "", ""},
	{"crs other", `{"type":"Point","coordinates":[1,2],"crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::3857"}}}`, Options{}, RuleCRS, "/crs"},
	{"crs null", `{"type":"Point","coordinates":[1,2],"crs":null}`, Options{}, RuleCRS, "/crs"},
	{"crs rejected", `{"type":"Point","coordinates":[1,2],"crs":{"type":"name","properties":{"name":"EPSG:4326"}}}`, Options{CRS: CRSReject}, RuleCRS, "/crs"},
	{"crs ignored", `{"type":"Point","coordinates":[1,2],"crs":{"type":"name","properties":{"name":"EPSG:3857"}}}`, Options{CRS: CRSIgnore}, "", ""},

	{"3D position", pt2(`[1,2,3]`), Options{}, "", ""},
	{"coordinates before type", `{"coordinates":[[0,0],[1,1]],"type":"LineString"}`, Options{}, "", ""},
	{"coordinates before type, bad", `{"coordinates":[[0,0],[1,null]],"type":"LineString"}`, Options{}, RulePositionElement, "/coordinates/1/1"},
	{"coordinates string", `{"type":"Point","coordinates":"1,2"}`, Options{}, RuleWrongType, "/coordinates"},
	{"position too short", pt2(`[1]`), Options{}, RulePositionLength, "/coordinates"},
	{"position too long", pt2(`[1,2,3,4]`), Options{}, RulePositionLength, "/coordinates"},
	{"position too long allowed", pt2(`[1,2,3,4]`), Options{AllowExtraDimensions: true}, "", ""},
	{"null in position", pt2(`[1,null]`), Options{}, RulePositionElement, "/coordinates/1"},
	{"string in position", pt2(`[1,"2"]`), Options{}, RulePositionElement, "/coordinates/1"},
	{"huge number", pt2(`[1e400,2]`), Options{}, RulePositionNotFinite, "/coordinates/0"},
	{"nested too deeply", pt2(`[[1,2]]`), Options{}, RuleCoordinatesNesting, "/coordinates/0"},
	{"nested not deeply enough", `{"type":"MultiPoint","coordinates":[1,2]}`, Options{}, RuleCoordinatesNesting, "/coordinates/0"},
	{"longitude bounds", pt2(`[-180,90]`), Options{}, "", ""},
	{"longitude out of range", pt2(`[500,0]`), Options{}, RuleLongitudeRange, "/coordinates"},
	{"latitude out of range", `{"type":"LineString","coordinates":[[0,0],[1,-90.5]]}`, Options{}, RuleLatitudeRange, "/coordinates/1"},
	{"mixed dimensions", `{"type":"LineString","coordinates":[[0,0],[1,1,5]]}`, Options{}, RuleMixedDimensions, "/coordinates/1"},
	{"mixed dimensions dropped", `{"type":"LineString","coordinates":[[0,0],[1,1,5]]}`, Options{MixedDimensions: MixedDimensionsDropZ}, "", ""},
	{"mixed in a collection is fine", `{"type":"GeometryCollection","geometries":[` + pt2(`[1,2]`) + `,` + pt2(`[1,2,3]`) + `]}`, Options{}, "", ""},

	{"empty multipoint refused", `{"type":"MultiPoint","coordinates":[]}`, Options{RejectEmptyCoordinates: true}, RuleEmptyCoordinates, "/coordinates"},
	{"empty polygon refused", `{"type":"Polygon","coordinates":[]}`, Options{RejectEmptyCoordinates: true}, RuleEmptyCoordinates, "/coordinates"},
	{"empty multipoint (RFC 7946 section 3.1)", `{"type":"MultiPoint","coordinates":[]}`, Options{}, "", ""},
	{"empty polygon (RFC 7946 section 3.1)", `{"type":"Polygon","coordinates":[]}`, Options{}, "", ""},
	{"empty multipolygon member", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[]]}`, Options{}, RuleEmptyCoordinates, "/coordinates/1"},
	{"multipoint", `{"type":"MultiPoint","coordinates":[[1,2]]}`, Options{}, "", ""},
	{"one-position linestring", `{"type":"LineString","coordinates":[[1,2]]}`, Options{}, RuleLineStringTooShort, "/coordinates"},
	{"empty linestring refused", `{"type":"LineString","coordinates":[]}`, Options{RejectEmptyCoordinates: true}, RuleEmptyCoordinates, "/coordinates"},
	{"empty linestring (RFC 7946 section 3.1)", `{"type":"LineString","coordinates":[]}`, Options{}, "", ""},
	{"short line in multilinestring", `{"type":"MultiLineString","coordinates":[[[0,0],[1,1]],[[1,2]]]}`, Options{}, RuleLineStringTooShort, "/coordinates/1"},
	{"multilinestring", `{"type":"MultiLineString","coordinates":[[[0,0],[1,1]],[[1,2],[3,4]]]}`, Options{}, "", ""},

	{"polygon", poly(sq), Options{}, "", ""},
	{"ring too short", poly(`[[0,0],[1,0],[0,0]]`), Options{}, RuleRingTooShort, "/coordinates/0"},
	{"ring not closed", poly(`[[0,0],[4,0],[4,4],[0,4]]`), Options{}, RuleRingNotClosed, "/coordinates/0"},
	{"ring closed in 2D only", poly(`[[0,0,1],[4,0,1],[4,4,1],[0,0,2]]`), Options{}, RuleRingNotClosed, "/coordinates/0"},
	{"repeated positions", poly(`[[0,0],[0,0],[4,0],[4,4],[4,4],[0,4],[0,0]]`), Options{}, "", ""},
	{"degenerate ring", poly(`[[0,0],[1,1],[0,0],[0,0]]`), Options{}, RuleRingSelfIntersection, "/coordinates/0"},
	{"bow tie", poly(`[[0,0],[2,2],[2,0],[0,2],[0,0]]`), Options{}, RuleRingSelfIntersection, "/coordinates/0/2"},
	{"collinear ring", poly(`[[0,0],[1,0],[2,0],[0,0]]`), Options{}, RuleRingSelfIntersection, "/coordinates/0/2"},
	{"self-touching ring", poly(`[[0,0],[4,0],[2,2],[4,4],[0,4],[2,2],[0,0]]`), Options{}, RuleRingSelfIntersection, "/coordinates/0/5"},
	{"hole", poly(sq, `[[1,1],[1,2],[2,2],[2,1],[1,1]]`), Options{}, "", ""},
	{"hole touching shell at a point", poly(sq, `[[0,2],[2,1],[2,3],[0,2]]`), Options{}, "", ""},
	{"hole touching shell at two points", poly(sq, `[[0,2],[2,1],[4,2],[2,3],[0,2]]`), Options{}, RuleInteriorDisconnected, "/coordinates/1/2"},
	{"hole crossing shell", poly(sq, `[[2,2],[6,2],[6,3],[2,3],[2,2]]`), Options{}, RuleRingIntersection, "/coordinates/1/0"},
	{"hole outside shell", poly(sq, `[[5,5],[6,5],[6,6],[5,5]]`), Options{}, RuleHoleOutsideShell, "/coordinates/1"},
	{"two holes", poly(sq, `[[1,1],[1,2],[2,2],[1,1]]`, `[[3,3],[3,3.5],[3.5,3.5],[3,3]]`), Options{}, "", ""},
	{"nested holes", poly(sq, `[[0.5,0.5],[0.5,3.5],[3.5,3.5],[3.5,0.5],[0.5,0.5]]`, `[[1,1],[1,2],[2,2],[1,1]]`), Options{}, RuleNestedHoles, "/coordinates/2"},
	{"nearly collinear spike", poly(`[[0,0],[1,1e-300],[2,0],[1,1],[0,0]]`), Options{}, "", ""},

	{"multipolygon", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[5,5],[6,5],[6,6],[5,5]]]]}`, Options{}, "", ""},
	{"multipolygon touching at a point", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[4,4],[6,4],[6,6],[4,4]]]]}`, Options{}, "", ""},
	{"multipolygon island in hole", `{"type":"MultiPolygon","coordinates":[[` + sq + `,[[1,1],[1,3],[3,3],[3,1],[1,1]]],[[[1.5,1.5],[2.5,1.5],[2.5,2.5],[1.5,1.5]]]]}`, Options{}, "", ""},
	{"multipolygon overlapping", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[2,2],[6,2],[6,6],[2,2]]]]}`, Options{}, RuleMultiPolygonOverlap, "/coordinates/1/0/0"},
	{"multipolygon contained", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[1,1],[2,1],[2,2],[1,1]]]]}`, Options{}, RuleMultiPolygonOverlap, "/coordinates/1"},
	{"multipolygon shared edge", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[4,0],[8,0],[8,4],[4,4],[4,0]]]]}`, Options{}, RuleMultiPolygonOverlap, "/coordinates/1/0/0"},
	{"multipolygon crossing only at vertices", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[0,0],[6,-2],[4,4],[0,0]]]]}`, Options{}, RuleMultiPolygonOverlap, "/coordinates/1/0/0"},
	{"multipolygon touching at two vertices", `{"type":"MultiPolygon","coordinates":[[` + sq + `],[[[4,0],[6,2],[4,4],[5,2],[4,0]]]]}`, Options{}, "", ""},

	{"clockwise shell lenient", poly(`[[0,0],[0,4],[4,4],[4,0],[0,0]]`), Options{}, "", ""},
	{"clockwise shell strict", poly(`[[0,0],[0,4],[4,4],[4,0],[0,0]]`), Options{StrictRightHandRule: true}, RuleRightHandRule, "/coordinates/0"},
	{"counterclockwise hole strict", poly(sq, `[[1,1],[2,1],[2,2],[1,1]]`), Options{StrictRightHandRule: true}, RuleRightHandRule, "/coordinates/1"},
	{"right-hand rule strict", poly(sq, `[[1,1],[1,2],[2,2],[1,1]]`), Options{StrictRightHandRule: true}, "", ""},

	{"bbox", `{"type":"Point","coordinates":[1,2],"bbox":[1,2,1,2]}`, Options{}, "", ""},
	{"bbox 3D", `{"type":"Point","coordinates":[1,2,3],"bbox":[0,0,0,2,2,5]}`, Options{}, "", ""},
	{"bbox length", `{"type":"Point","coordinates":[1,2],"bbox":[1,2,1]}`, Options{}, RuleBBoxLength, "/bbox"},
	{"bbox string", `{"type":"Point","coordinates":[1,2],"bbox":"1,2,1,2"}`, Options{}, RuleWrongType, "/bbox"},
	{"bbox element", `{"type":"Point","coordinates":[1,2],"bbox":[1,2,"1",2]}`, Options{}, RuleBBoxElement, "/bbox/2"},
	{"bbox order", `{"type":"Point","coordinates":[1,2],"bbox":[0,3,2,1]}`, Options{}, RuleBBoxOrder, "/bbox"},
	{"bbox range", `{"type":"Point","coordinates":[1,2],"bbox":[0,0,2,100]}`, Options{}, RuleBBoxRange, "/bbox"},
	{"bbox antimeridian", `{"type":"LineString","coordinates":[[170,0],[-170,1]],"bbox":[170,0,-170,1]}`, Options{}, "", ""},
	{"bbox antimeridian excludes", `{"type":"LineString","coordinates":[[170,0],[0,1]],"bbox":[170,0,-170,1]}`, Options{}, RuleBBoxExcludesGeometry, "/bbox"},
	{"bbox excludes", `{"type":"FeatureCollection","bbox":[0,0,1,1],"features":[` + feature(pt2(`[0.5,0.5]`), "") + `,` + feature(pt2(`[2,0.5]`), "") + `]}`, Options{}, RuleBBoxExcludesGeometry, "/bbox"},
	{"bbox excludes altitude", `{"type":"Point","coordinates":[1,2,9],"bbox":[0,0,0,2,2,5]}`, Options{}, RuleBBoxExcludesGeometry, "/bbox"},

	{"depth within limit", `{"type":"Feature","geometry":null,"properties":{"a":[[[1]]]}}`, Options{MaxDepth: 5}, "", ""},
	{"depth over limit", `{"type":"Feature","geometry":null,"properties":{"a":[[[[1]]]]}}`, Options{MaxDepth: 5}, RuleLimitDepth, "/properties/a/0/0/0"},
	{"positions within limit", `{"type":"LineString","coordinates":[[0,0],[1,1]]}`, Options{MaxPositions: 2}, "", ""},
	{"positions over limit", `{"type":"LineString","coordinates":[[0,0],[1,1],[2,2]]}`, Options{MaxPositions: 2}, RuleLimitPositions, "/coordinates/2"},
	{"bytes within limit", pt2(`[1,2]`), Options{MaxBytes: 36}, "", ""},
	{"bytes over limit", pt2(`[1,2]`), Options{MaxBytes: 35}, RuleLimitBytes, ""},
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"m` + strconv.Itoa(i) + `":0`)
	}
	return b.String()
}

// nestGC returns GeometryCollections nested depth deep around a Point.
func nestGC(depth int) string {
	s := pt2(`[1,2]`)
	for range depth {
		s = `{"type":"GeometryCollection","geometries":[` + s + `]}`
	}
	return s
}

func TestRules(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate([]byte(c.doc), c.opts)
			_, derr := decode([]byte(c.doc), c.opts)
			if (err == nil) != (derr == nil) {
				t.Fatalf("Validate: %v, but DecodeDocument: %v", err, derr)
			}
			if c.rule == "" {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want nil", c.doc, err)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate(%s) = %v, want a *ValidationError", c.doc, err)
			}
			for _, p := range verr.Violations {
				if p.Rule == c.rule && p.Pointer == c.pointer {
					return
				}
			}
			t.Fatalf("Validate(%s): want %s at %q, got %v", c.doc, c.rule, c.pointer, verr.Violations)
		})
	}
}

// TestEveryRuleCovered makes sure each rule has a failing and a passing
// case above (the passing case is any valid document of the same kind).
func TestEveryRuleCovered(t *testing.T) {
	rules := []string{RuleDuplicateMember, RuleInvalidUTF8, RuleRootNotObject, RuleNumberTooLarge, RuleLimitBytes, RuleLimitDepth,
		RuleLimitPositions, RuleLimitCollectionDepth, RuleMissingMember, RuleWrongType, RuleUnknownType,
		RuleUnexpectedType, RuleForbiddenMember, RuleCRS, RuleCoordinatesNesting, RulePositionElement,
		RulePositionLength, RulePositionNotFinite, RuleLongitudeRange, RuleLatitudeRange, RuleMixedDimensions,
		RuleEmptyCoordinates, RuleLineStringTooShort, RuleRingTooShort, RuleRingNotClosed,
		RuleRingSelfIntersection, RuleRingIntersection, RuleHoleOutsideShell, RuleNestedHoles,
		RuleInteriorDisconnected, RuleMultiPolygonOverlap, RuleRightHandRule, RuleBBoxLength, RuleBBoxElement,
		RuleBBoxOrder, RuleBBoxRange, RuleBBoxExcludesGeometry}
	covered := map[string]bool{}
	for _, c := range ruleCases {
		covered[c.rule] = true
	}
	for _, r := range rules {
		if !covered[r] {
			t.Errorf("rule %s has no failing case", r)
		}
	}
}
