package geojson

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unsafe"

	"github.com/geoidem/geoidem/problem"
	"github.com/twpayne/go-geom"
)

// within reports whether sub is a sub-slice of whole: the same memory, not a copy.
func within(sub, whole []byte) bool {
	if len(sub) == 0 || len(whole) == 0 {
		return false
	}
	s, w := uintptr(unsafe.Pointer(unsafe.SliceData(sub))), uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	return s >= w && s+uintptr(len(sub)) <= w+uintptr(len(whole))
}

func geoRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/geo+json")
	return r
}

// DecodeRequest returns the document's features: ids exactly as written
// (member names are case-sensitive), geometry as go-geom with Z kept, and
// properties and raw bytes as sub-slices of the body.
func TestDecodeRequestFeatures(t *testing.T) {
	body := []byte(`{"type":"FeatureCollection","features":[
	  {"type":"Feature","id":"real","ID":"spoof","geometry":{"type":"LineString","coordinates":[[1,2,3],[4,5,6.5]]},"properties":{"a":"x\u0000y","n":[1e308]}},
	  {"type":"Feature","Type":"Feature","id":12.50,"geometry":null,"properties":null},
	  {"properties":{},"geometry":{"type":"Point","coordinates":[7,8]},"type":"Feature","id":"\u00e9"}
	],"Type":"Feature"}`)
	v, err := RequestValidator{}.DecodeRequest(geoRequest(string(body)), body)
	if err != nil {
		t.Fatal(err)
	}
	doc, ok := v.(*Document)
	if !ok {
		t.Fatalf("DecodeRequest returned %T, want *Document", v)
	}
	if doc.Type != "FeatureCollection" || len(doc.Features) != 3 {
		t.Fatalf("type %q, %d features; want FeatureCollection, 3", doc.Type, len(doc.Features))
	}
	f0, f1, f2 := doc.Features[0], doc.Features[1], doc.Features[2]
	if f0.ID != "real" {
		t.Errorf("feature 0 id %#v, want \"real\" (\"ID\" is a foreign member)", f0.ID)
	}
	if f1.ID != json.Number("12.50") {
		t.Errorf("feature 1 id %#v, want json.Number(\"12.50\") as written", f1.ID)
	}
	if f2.ID != "é" {
		t.Errorf("feature 2 id %#v, want \"é\"", f2.ID)
	}
	ls, ok := f0.Geometry.(*geom.LineString)
	if !ok || ls.Layout() != geom.XYZ || !equalFloats(ls.FlatCoords(), []float64{1, 2, 3, 4, 5, 6.5}) {
		t.Errorf("feature 0 geometry %#v, want an XYZ LineString with Z kept", f0.Geometry)
	}
	if f1.Geometry != nil {
		t.Errorf("null geometry decoded as %#v", f1.Geometry)
	}
	if string(f0.Properties) != `{"a":"x\u0000y","n":[1e308]}` || !within(f0.Properties, body) {
		t.Errorf("feature 0 properties %q (sub-slice of the body: %v)", f0.Properties, within(f0.Properties, body))
	}
	if string(f1.Properties) != "null" || string(f2.Properties) != "{}" {
		t.Errorf("properties %q and %q, want null and {}", f1.Properties, f2.Properties)
	}
	wantRaw := `{"type":"Feature","Type":"Feature","id":12.50,"geometry":null,"properties":null}`
	if string(f1.Raw) != wantRaw || !within(f1.Raw, body) {
		t.Errorf("feature 1 raw %q, want %q as a sub-slice of the body", f1.Raw, wantRaw)
	}
	if !strings.HasPrefix(string(f2.Raw), `{"properties":{}`) || !strings.HasSuffix(string(f2.Raw), `"id":"\u00e9"}`) {
		t.Errorf("feature 2 raw %q: want the bytes as received, escapes included", f2.Raw)
	}
	// Appending to a sub-slice never writes into the body.
	_ = append(f1.Raw, 'X')
	if !strings.Contains(string(body), wantRaw+",") {
		t.Error("appending to Raw overwrote the body")
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A single Feature is one feature whose Raw is the body without its
// surrounding whitespace; a bare geometry is one feature without id or
// properties.
func TestDecodeDocumentRoots(t *testing.T) {
	body := []byte(" \n{\"type\":\"Feature\",\"id\":\"p\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[1,2,3]},\"properties\":null}\n")
	doc, err := DecodeDocument(body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Type != "Feature" || len(doc.Features) != 1 || string(doc.Features[0].Raw) != strings.TrimSpace(string(body)) {
		t.Fatalf("doc %+v", doc)
	}
	if p, ok := doc.Features[0].Geometry.(*geom.Point); !ok || p.Layout() != geom.XYZ || p.Z() != 3 {
		t.Errorf("geometry %#v, want POINT Z (1 2 3)", doc.Features[0].Geometry)
	}
	gbody := []byte(`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]},{"type":"Point","coordinates":[1,2,3]}]}`)
	doc, err = DecodeDocument(gbody, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Type != "GeometryCollection" || len(doc.Features) != 1 || doc.Features[0].ID != nil || doc.Features[0].Properties != nil {
		t.Fatalf("bare geometry: %+v", doc)
	}
	gc, ok := doc.Features[0].Geometry.(*geom.GeometryCollection)
	if !ok || gc.NumGeoms() != 2 || gc.Geom(0).Layout() != geom.XY || gc.Geom(1).Layout() != geom.XYZ {
		t.Errorf("mixed collection %#v: want its members' own layouts", doc.Features[0].Geometry)
	}
	if _, err := DecodeDocument([]byte(`{"type":"Feature","geometry":null}`), Options{}); err == nil {
		t.Error("an invalid document decoded without error")
	}
}

// RFC 7946 section 3.1 allows empty coordinates: accepted by default,
// decoded as empty go-geom geometries; Options.RejectEmptyCoordinates
// refuses them.
func TestEmptyCoordinates(t *testing.T) {
	for _, typ := range []string{"Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon"} {
		body := []byte(`{"type":"Feature","id":"e","geometry":{"type":"` + typ + `","coordinates":[]},"properties":null}`)
		doc, err := DecodeDocument(body, Options{})
		if err != nil {
			t.Errorf("%s with empty coordinates: %v, want accepted", typ, err)
			continue
		}
		g := doc.Features[0].Geometry
		if g == nil || !g.Empty() {
			t.Errorf("%s with empty coordinates decoded as %#v, want an empty geometry", typ, g)
		}
		err = Validate(body, Options{RejectEmptyCoordinates: true})
		var verr *ValidationError
		if !errors.As(err, &verr) || verr.Violations[0].Rule != RuleEmptyCoordinates || verr.Violations[0].Pointer != "/geometry/coordinates" {
			t.Errorf("%s with RejectEmptyCoordinates: %v, want %s at /geometry/coordinates", typ, err, RuleEmptyCoordinates)
		}
	}
	if err := Validate([]byte(`{"type":"MultiPolygon","coordinates":[]}`), Options{}); err != nil {
		t.Errorf("an empty MultiPolygon: %v", err)
	}
}

// CheckHeaders looks at the Content-Type only, so the middleware can call
// it before the key is claimed.
func TestCheckHeaders(t *testing.T) {
	r := geoRequest("")
	if err := (RequestValidator{}).CheckHeaders(r); err != nil {
		t.Errorf("geo+json: %v", err)
	}
	r.Header.Set("Content-Type", "text/plain")
	var mt problem.Details
	if err := (RequestValidator{}).CheckHeaders(r); !errors.As(err, &mt) || mt.HTTPStatus() != http.StatusUnsupportedMediaType || mt.Type != ProblemTypeUnsupportedMediaType {
		t.Errorf("text/plain: %v, want a problem.Details of type unsupported-media-type (415)", err)
	}
	if _, err := (RequestValidator{}).DecodeRequest(r, []byte(pt2(`[1,2]`))); !errors.As(err, &mt) || mt.Type != ProblemTypeUnsupportedMediaType {
		t.Errorf("DecodeRequest with text/plain: %v, want a problem.Details of type unsupported-media-type", err)
	}
}

// With Options.AllowExtraDimensions, a geometry whose every position has a
// fourth element keeps it as M (layout XYZM); a geometry where only some
// positions have one drops it.
func TestMeasureKept(t *testing.T) {
	opts := Options{AllowExtraDimensions: true}
	body := []byte(`{"type":"Feature","id":"m","bbox":[0,0,0,5,5,9],"geometry":{"type":"Polygon","coordinates":[[[0,0,1,10],[4,0,2,11],[4,4,3,12],[0,4,4,13],[0,0,1,10]]]},"properties":null}`)
	doc, err := DecodeDocument(body, opts)
	if err != nil {
		t.Fatal(err)
	}
	pg, ok := doc.Features[0].Geometry.(*geom.Polygon)
	want := []float64{0, 0, 1, 10, 4, 0, 2, 11, 4, 4, 3, 12, 0, 4, 4, 13, 0, 0, 1, 10}
	if !ok || pg.Layout() != geom.XYZM || !equalFloats(pg.FlatCoords(), want) || pg.Ends()[0] != 20 {
		t.Fatalf("geometry %#v, want an XYZM polygon with M kept", doc.Features[0].Geometry)
	}
	fs, err := decode([]byte(`{"type":"MultiPoint","coordinates":[[1,2,3,4],[5,6,7]]}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	if mp := fs[0].Geometry; mp.Layout() != geom.XYZ || !equalFloats(mp.FlatCoords(), []float64{1, 2, 3, 5, 6, 7}) {
		t.Errorf("partly measured MultiPoint %v %v, want XYZ with M dropped", mp.Layout(), mp.FlatCoords())
	}
	if err := Validate([]byte(`{"type":"Point","coordinates":[1,2,3,4]}`), Options{}); err == nil {
		t.Error("a 4-element position accepted without AllowExtraDimensions")
	}
}
