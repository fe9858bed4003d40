package testkit

import (
	"math"
	"strconv"
	"strings"
)

// The hostile inputs: documents whose cost used to be far out
// of proportion to their size, each with a benign document of about the
// same size to compare against.

// Holes returns a GeoJSON Feature holding one valid Polygon: the shell
// [-170, 170] × [-80, 80] with n triangular holes, one in each cell of a
// 1-degree grid (n at most 53,901), each hole 4 positions in about 52
// bytes.
func Holes(n int) []byte {
	b := []byte(`{"type":"Feature","properties":null,"geometry":{"type":"Polygon","coordinates":[` +
		`[[-170,-80],[170,-80],[170,80],[-170,80],[-170,-80]]`)
	const cols = 339
	for i := range n {
		x, y := float64(-169+i%cols), float64(-79+i/cols)
		// Clockwise: (x, y) → (x, y+.5) → (x+.5, y) → (x, y).
		b = append(b, ",[["...)
		b = strconv.AppendFloat(b, x, 'f', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, y, 'f', -1, 64)
		b = append(b, "],["...)
		b = strconv.AppendFloat(b, x, 'f', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, y+0.5, 'f', -1, 64)
		b = append(b, "],["...)
		b = strconv.AppendFloat(b, x+0.5, 'f', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, y, 'f', -1, 64)
		b = append(b, "],["...)
		b = strconv.AppendFloat(b, x, 'f', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, y, 'f', -1, 64)
		b = append(b, "]]"...)
	}
	return append(b, `]}}`...)
}

// Circle returns a GeoJSON Feature holding one Polygon of n vertices (plus
// the closing one): a circle of radius scale around (10·scale, 50·scale),
// every coordinate written with 10 significant digits. Circle(n, 1) and
// Circle(n, 1e-200) are the same shape at two scales.
func Circle(n int, scale float64) []byte {
	b := []byte(`{"type":"Feature","properties":null,"geometry":{"type":"Polygon","coordinates":[[`)
	for i := 0; i <= n; i++ {
		a := 2 * math.Pi * float64(i%n) / float64(n)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendFloat(b, scale*(10+math.Cos(a)), 'g', 10, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, scale*(50+math.Sin(a)), 'g', 10, 64)
		b = append(b, ']')
	}
	return append(b, `]]}}`...)
}

// ProblemBomb returns a Feature of size bytes whose properties hold one
// member with a name of '<' characters as long as the size allows,
// followed by an array of bad numbers: every bad number is a problem
// whose JSON pointer repeats the name (and '<' is what HTML-escaping
// encoders blow up sixfold).
func ProblemBomb(size, bad int) []byte {
	head := `{"type":"Feature","geometry":null,"properties":{"`
	tail := `":[` + strings.TrimSuffix(strings.Repeat("1e400,", bad), ",") + `]}}`
	return []byte(head + strings.Repeat("<", max(0, size-len(head)-len(tail))) + tail)
}

// BigString returns a valid Feature of size bytes whose properties hold
// one long string: the benign document of ProblemBomb's size.
func BigString(size int) []byte {
	head := `{"type":"Feature","geometry":null,"properties":{"name":"`
	tail := `"}}`
	return []byte(head + strings.Repeat("<", max(0, size-len(head)-len(tail))) + tail)
}

// CircleOfSize returns Circle(n, scale) for the n that makes it about size
// bytes long: the benign polygon of a hostile one's size.
func CircleOfSize(size int, scale float64) []byte {
	per := float64(len(Circle(1000, scale))) / 1000
	return Circle(max(3, int(float64(size)/per)), scale)
}

// The bodies that allocate most per byte: documents of about size bytes whose
// every element is a problem, or whose polygons overlap, to compare
// against CircleOfSize(size, 1) in bytes allocated per input byte.

// repeatBody returns head, then unit repeated (comma-separated) until the
// body is about size bytes, then tail.
func repeatBody(size int, head, tail string, unit func(i int) string) []byte {
	b := []byte(head)
	for i := 0; len(b)+len(tail) < size; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, unit(i)...)
	}
	return append(b, tail...)
}

// EmptyPositions returns a MultiPoint of about size bytes whose every
// position is the empty array `[]`: one problem per 3 bytes.
func EmptyPositions(size int) []byte {
	return repeatBody(size, `{"type":"MultiPoint","coordinates":[`, `]}`, func(int) string { return "[]" })
}

// EmptyLines returns a MultiLineString of about size bytes whose every
// LineString is `[]`.
func EmptyLines(size int) []byte {
	return repeatBody(size, `{"type":"MultiLineString","coordinates":[`, `]}`, func(int) string { return "[]" })
}

// EmptyRings returns a Polygon of about size bytes whose every ring is
// `[]`.
func EmptyRings(size int) []byte {
	return repeatBody(size, `{"type":"Polygon","coordinates":[`, `]}`, func(int) string { return "[]" })
}

// EmptyPolygons returns a MultiPolygon of about size bytes whose every
// Polygon is `[[]]`: one empty ring.
func EmptyPolygons(size int) []byte {
	return repeatBody(size, `{"type":"MultiPolygon","coordinates":[`, `]}`, func(int) string { return "[[]]" })
}

// Triangles returns a MultiPolygon of about size bytes of triangles with
// integer corners, each overlapping its neighbours: every Polygon is
// valid, the MultiPolygon is not.
func Triangles(size int) []byte {
	return repeatBody(size, `{"type":"MultiPolygon","coordinates":[`, `]}`, func(i int) string {
		x, y := strconv.Itoa(i%170), strconv.Itoa((i/170)%80)
		x2, y2 := strconv.Itoa(i%170+2), strconv.Itoa((i/170)%80+2)
		return "[[[" + x + "," + y + "],[" + x2 + "," + y + "],[" + x + "," + y2 + "],[" + x + "," + y + "]]]"
	})
}

// NullFeatures returns a FeatureCollection of about size bytes whose every
// Feature has a null geometry and null properties: the most Features a
// body of its size can hold, each of which a decode returns.
func NullFeatures(size int) []byte {
	return repeatBody(size, `{"type":"FeatureCollection","features":[`, `]}`, func(int) string {
		return `{"type":"Feature","geometry":null,"properties":null}`
	})
}
