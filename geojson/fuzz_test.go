package geojson

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twpayne/go-geom"
	gogeojson "github.com/twpayne/go-geom/encoding/geojson"
)

// addSeeds adds every rule case and every geojsonhint file as a seed.
func addSeeds(f *testing.F) {
	for _, c := range ruleCases {
		f.Add([]byte(c.doc))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "geojsonhint", "*", "*.geojson"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
}

// checkErr asserts the error contract of Validate and DecodeDocument.
func checkErr(t *testing.T, err error) {
	t.Helper()
	var serr *SyntaxError
	var verr *ValidationError
	switch {
	case err == nil:
	case errors.As(err, &serr):
		if !json.Valid(serr.ProblemJSON()) {
			t.Fatalf("invalid problem document %s", serr.ProblemJSON())
		}
	case errors.As(err, &verr):
		if len(verr.Violations) == 0 {
			t.Fatal("ValidationError without problems")
		}
		if !json.Valid(verr.ProblemJSON()) {
			t.Fatalf("invalid problem document %s", verr.ProblemJSON())
		}
	default:
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
}

func FuzzValidate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Validate(data, Options{MaxPositions: 10000})
		checkErr(t, err)
		// Validate must agree with encoding/json on what is JSON, except
		// for what I-JSON adds (invalid UTF-8, which encoding/json
		// replaces) and the limits.
		var serr *SyntaxError
		if errors.As(err, &serr) && json.Valid(data) {
			t.Fatalf("Validate says malformed (%v) but encoding/json accepts %q", err, data)
		}
		var verr *ValidationError
		if err == nil || errors.As(err, &verr) && !hasRule(verr, RuleLimitDepth, RuleLimitCollectionDepth, RuleLimitPositions) {
			if !json.Valid(data) {
				t.Fatalf("Validate accepts as JSON (%v) what encoding/json rejects: %q", err, data)
			}
		}
		_, derr := DecodeDocument(data, Options{MaxPositions: 10000})
		if (err == nil) != (derr == nil) {
			t.Fatalf("Validate: %v; DecodeDocument: %v", err, derr)
		}
	})
}

func hasRule(verr *ValidationError, rules ...string) bool {
	for _, p := range verr.Violations {
		for _, r := range rules {
			if p.Rule == r {
				return true
			}
		}
	}
	return false
}

func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := decode(data, Options{MaxPositions: 10000})
		checkErr(t, err)
		// Extra dimensions (M kept when on every position) accept a superset.
		if _, xerr := DecodeDocument(data, Options{MaxPositions: 10000, AllowExtraDimensions: true}); err == nil && xerr != nil {
			t.Fatalf("accepted by default but not with AllowExtraDimensions: %v", xerr)
		}
		if err != nil {
			return
		}
		// Round trip: what DecodeDocument accepted, re-encoded by go-geom, is
		// accepted again with the same geometry.
		for _, f := range fs {
			if f.Geometry == nil {
				continue
			}
			enc, err := gogeojson.Marshal(f.Geometry)
			if err != nil {
				t.Fatalf("go-geom cannot encode %T: %v", f.Geometry, err)
			}
			again, err := decode(enc, Options{})
			if err != nil {
				t.Fatalf("re-encoded geometry %s rejected: %v", enc, err)
			}
			if !sameFlat(f.Geometry, again[0].Geometry) {
				t.Fatalf("round trip changed the geometry: %s", enc)
			}
		}
	})
}

func sameFlat(a, b geom.T) bool {
	if ga, ok := a.(*geom.GeometryCollection); ok {
		gb, ok := b.(*geom.GeometryCollection)
		if !ok || ga.NumGeoms() != gb.NumGeoms() {
			return false
		}
		for i := range ga.NumGeoms() {
			if !sameFlat(ga.Geom(i), gb.Geom(i)) {
				return false
			}
		}
		return true
	}
	if a.Layout() != b.Layout() {
		return false
	}
	ac, bc := a.FlatCoords(), b.FlatCoords()
	if len(ac) != len(bc) {
		return false
	}
	for i := range ac {
		if ac[i] != bc[i] {
			return false
		}
	}
	return true
}
