package geojson

import (
	"math"
	"strconv"
	"testing"
)

func strconvFormat(f float64, fmt byte, prec int) string {
	return strconv.FormatFloat(f, fmt, prec, 64)
}

func mustParseFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("ParseFloat(%q): %v", s, err)
	}
	return f
}

// onSegment reports whether p lies on the closed segment ab.
func onSegment(a, b, p pt) bool {
	if orient(a, b, p) != 0 {
		return false
	}
	return math.Min(a.x, b.x) <= p.x && p.x <= math.Max(a.x, b.x) &&
		math.Min(a.y, b.y) <= p.y && p.y <= math.Max(a.y, b.y)
}

// pointInRing returns 1 if p is inside the closed ring (vertices without
// the repeated closing vertex), 0 if on its boundary and -1 if outside,
// using an exact winding number.
func pointInRing(p pt, ring []pt) int {
	wn := 0
	n := len(ring)
	for i := range n {
		a, b := ring[i], ring[(i+1)%n]
		if onSegment(a, b, p) {
			return 0
		}
		if a.y <= p.y {
			if b.y > p.y && orient(a, b, p) > 0 {
				wn++
			}
		} else if b.y <= p.y && orient(a, b, p) < 0 {
			wn--
		}
	}
	if wn != 0 {
		return 1
	}
	return -1
}
