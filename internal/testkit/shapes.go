// This file makes the polygons that geoidem's validation
// benchmarks measure (geojson's own and the bench report's), so both
// measure the same bytes.

package testkit

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

// PointFeature returns a small GeoJSON Feature holding one Point, with an
// id and two properties: the typical webhook body.
func PointFeature() []byte {
	return []byte(`{"type":"Feature","id":"evt-1","properties":{"name":"depot","count":3},"geometry":{"type":"Point","coordinates":[13.404954,52.520008]}}`)
}

// Points returns a FeatureCollection of n Point Features around (10, 50),
// each with an id and one property.
func Points(n int) []byte {
	b := []byte(`{"type":"FeatureCollection","features":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		a := 2 * math.Pi * float64(i) / float64(n)
		b = append(b, `{"type":"Feature","id":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"properties":{"n":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `},"geometry":{"type":"Point","coordinates":[`...)
		b = strconv.AppendFloat(b, 10+math.Cos(a), 'f', 6, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, 50+math.Sin(a), 'f', 6, 64)
		b = append(b, `]}}`...)
	}
	return append(b, `]}`...)
}

// ParseSpeedInput is one input of the Validate ÷ json.Valid comparison.
type ParseSpeedInput struct {
	Name string
	Data []byte
}

// ParseSpeedInputs are the inputs on which geojson.Validate is compared
// with encoding/json.Valid: a Point Feature, 1,000 Point Features, a
// circle of 100,000 vertices and zigzag stars of 10,000 and 100,000.
func ParseSpeedInputs() []ParseSpeedInput {
	return []ParseSpeedInput{
		{"Point Feature", PointFeature()},
		{"1,000 points", Points(1000)},
		{"circle 100k", Polygon(100_000, false)},
		{"zigzag 10k", Polygon(10_000, true)},
		{"zigzag 100k", Polygon(100_000, true)},
	}
}
