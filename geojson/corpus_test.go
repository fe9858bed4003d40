package geojson

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDisagreements lists the geojsonhint cases where this package
// deliberately gives another verdict than geojsonhint, with the reason.
// The test fails if a listed case stops disagreeing, so the list stays
// true.
var corpusDisagreements = map[string]string{
	// geojsonhint accepts any numbers; RFC 7946 coordinates are WGS 84
	// longitude and latitude, and this file has longitudes near -259 and
	// latitudes near -134: swapped axes or projected data, which no retry
	// will fix (see "Differences from GEOS and RFC 7946" in doc.go).
	"good/issue82.geojson": "rejected: longitude and latitude out of range",
	// RFC 7946 section 3.1.8 says producers SHOULD avoid nested and
	// single-member GeometryCollections; it does not make them invalid,
	// and a receiver that rejects them would 422 valid GeoJSON.
	"bad/geometrycollection_nested.geojson": "accepted: nested GeometryCollections are only discouraged (RFC 7946 section 3.1.8)",
	"bad/geometrycollection_single.geojson": "accepted: a single-member GeometryCollection is only discouraged (RFC 7946 section 3.1.8)",
}

// corpusMissing lists .result files whose input geojsonhint never
// shipped, so there is nothing to run.
var corpusMissing = map[string]string{
	// Also, RFC 7946 section 3.2 allows a numeric "id", which this
	// package accepts (see the "feature numeric id" rule case).
	"bad/bad-feature-with-number-id.result": "no .geojson input in the corpus",
}

func TestGeojsonhintCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "geojsonhint")
	good, err := filepath.Glob(filepath.Join(dir, "good", "*.geojson"))
	if err != nil || len(good) == 0 {
		t.Fatalf("no good cases found: %v", err)
	}
	results, err := filepath.Glob(filepath.Join(dir, "bad", "*.result"))
	if err != nil || len(results) == 0 {
		t.Fatalf("no bad cases found: %v", err)
	}
	checked := map[string]bool{}
	verdict := func(t *testing.T, name string, wantValid bool) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		verr := Validate(data, Options{})
		_, derr := decode(data, Options{})
		if (verr == nil) != (derr == nil) {
			t.Fatalf("Validate and DecodeDocument disagree: %v vs %v", verr, derr)
		}
		valid := verr == nil
		if reason, ok := corpusDisagreements[name]; ok {
			checked[name] = true
			if valid == wantValid {
				t.Fatalf("listed as a disagreement (%s) but the verdicts agree (valid=%v)", reason, valid)
			}
			t.Logf("deliberate disagreement: %s", reason)
			return
		}
		if valid != wantValid {
			t.Fatalf("valid = %v, want %v; error: %v", valid, wantValid, verr)
		}
	}
	for _, path := range good {
		name := filepath.ToSlash(strings.TrimPrefix(path, dir+string(filepath.Separator)))
		t.Run(name, func(t *testing.T) { verdict(t, name, true) })
	}
	for _, path := range results {
		name := filepath.ToSlash(strings.TrimPrefix(path, dir+string(filepath.Separator)))
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var entries []struct {
				Message string `json:"message"`
				Level   string `json:"level"`
			}
			if err := json.Unmarshal(raw, &entries); err != nil {
				t.Fatalf("reading %s: %v", path, err)
			}
			input := strings.TrimSuffix(name, ".result") + ".geojson"
			if _, err := os.Stat(filepath.Join(dir, input)); errors.Is(err, os.ErrNotExist) {
				if _, ok := corpusMissing[name]; !ok {
					t.Fatalf("%s has no input and is not listed in corpusMissing", name)
				}
				checked[name] = true
				t.Skipf("%s: %s", name, corpusMissing[name])
			}
			hasError := false
			for _, e := range entries {
				if e.Level != "message" {
					hasError = true
				}
			}
			if !hasError {
				// Warnings only: RFC 7946 lets a receiver accept these;
				// either verdict is acceptable, but it must not be malformed JSON.
				data, _ := os.ReadFile(filepath.Join(dir, input))
				var serr *SyntaxError
				if err := Validate(data, Options{}); errors.As(err, &serr) {
					t.Fatalf("warning-only case reported as malformed JSON: %v", err)
				}
				return
			}
			verdict(t, input, false)
		})
	}
	t.Run("bad/bad-json is malformed JSON", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dir, "bad", "bad-json.geojson"))
		if err != nil {
			t.Fatal(err)
		}
		var serr *SyntaxError
		if err := Validate(data, Options{}); !errors.As(err, &serr) {
			t.Fatalf("Validate = %v, want a *SyntaxError", err)
		}
	})
	for name := range corpusDisagreements {
		if !checked[name] {
			t.Errorf("disagreement %s was not found in the corpus", name)
		}
	}
	for name := range corpusMissing {
		if !checked[name] {
			t.Errorf("missing-input entry %s was not found in the corpus", name)
		}
	}
}
