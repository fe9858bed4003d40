// Package benchshape makes the polygons that geoidem's validation
// benchmarks measure (geojson's own and the bench report's), so both
// measure the same bytes.
package benchshape

import (
	"math"
	"strconv"
)

// Polygon returns a GeoJSON Feature holding one Polygon of n vertices (plus
// the closing one) around (10, 50): a circle, or, with zigzag, a star whose
// radius alternates between 0.8 and 1.0 from vertex to vertex.
func Polygon(n int, zigzag bool) []byte {
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
