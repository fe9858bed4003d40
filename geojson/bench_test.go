package geojson

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	gogeojson "github.com/twpayne/go-geom/encoding/geojson"
)

// benchPolygon returns a Feature holding one Polygon of n vertices (plus
// the closing one) around (10, 50): a circle, or a zigzag star whose
// radius alternates between 0.8 and 1.0 from vertex to vertex.
func benchPolygon(n int, zigzag bool) []byte {
	b := []byte(`{"type":"Feature","properties":{"name":"bench"},"geometry":{"type":"Polygon","coordinates":[[`)
	for i := 0; i <= n; i++ {
		k := i % n
		r := 1.0
		if zigzag && k%2 == 1 {
			r = 0.8
		}
		a := 2 * math.Pi * float64(k) / float64(n)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendFloat(b, 10+r*math.Cos(a), 'f', 9, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, 50+r*math.Sin(a), 'f', 9, 64)
		b = append(b, ']')
	}
	return append(b, `]]}}`...)
}

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
				if _, err := Decode(data, Options{}); err != nil {
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
