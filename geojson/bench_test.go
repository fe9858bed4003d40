package geojson

import (
	"encoding/json"
	"testing"

	gogeojson "github.com/twpayne/go-geom/encoding/geojson"

	"github.com/geoidem/geoidem/internal/testkit"
)

// benchPolygon is the shape both validation benchmarks measure.
var benchPolygon = testkit.Polygon

var benchShapes = []struct {
	name   string
	n      int
	zigzag bool
}{
	{"circle-100", 100, false},
	{"circle-10000", 10000, false},
	{"circle-100000", 100000, false},
	{"zigzag-100", 100, true},
	{"zigzag-10000", 10000, true},
	{"zigzag-100000", 100000, true},
}

func TestBenchPolygonsAreValid(t *testing.T) {
	for _, s := range benchShapes {
		data := benchPolygon(s.n, s.zigzag)
		if err := Validate(data, Options{}); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
		if s.n > 10000 {
			continue // slow under the race detector, and the same code
		}
		var f gogeojson.Feature
		if err := json.Unmarshal(data, &f); err != nil {
			t.Errorf("%s: go-geom: %v", s.name, err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	for _, s := range benchShapes {
		data := benchPolygon(s.n, s.zigzag)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(data, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, s := range benchShapes {
		data := benchPolygon(s.n, s.zigzag)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(data, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGoGeomUnmarshal is the baseline: go-geom's own decoder, which
// checks almost nothing, on the same bytes.
func BenchmarkGoGeomUnmarshal(b *testing.B) {
	for _, s := range benchShapes {
		data := benchPolygon(s.n, s.zigzag)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var f gogeojson.Feature
				if err := json.Unmarshal(data, &f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateVsJSONValid times Validate and encoding/json.Valid on
// the inputs of the parse-speed comparison, side by side: the goal is Validate at least as
// fast as json.Valid on each. bench/validate-callgrind.sh counts the
// instructions of both on these benchmarks.
//
//	go test -run '^$' -bench ValidateVsJSONValid ./geojson
func BenchmarkValidateVsJSONValid(b *testing.B) {
	for _, in := range testkit.ParseSpeedInputs() {
		b.Run(in.Name+"/Validate", func(b *testing.B) {
			b.SetBytes(int64(len(in.Data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(in.Data, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.Name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(in.Data)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(in.Data) {
					b.Fatal("not JSON")
				}
			}
		})
	}
}
