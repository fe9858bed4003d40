package geojson

import (
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// relationSteps parses data and returns the problems and the number of
// steps checkPolygons' ring relation pass took (after the sweep, which
// is O(n log n) on its own).
func relationSteps(t *testing.T, data []byte) (string, int) {
	t.Helper()
	p, err := parse(data, Options{}, buildNone)
	probs := ""
	if err != nil {
		probs = err.Error()
	}
	return probs, p.relSteps
}

// TestHolesLinearRelationPass: every hole walked back
// over all the holes before it to find its shell, so n holes took n²/2
// steps (20,000 holes: 754 ms). Each ring's shell is known once: the pass
// takes a few steps per ring.
func TestHolesLinearRelationPass(t *testing.T) {
	for _, n := range []int{100, 2000} {
		probs, steps := relationSteps(t, testkit.Holes(n))
		if probs != "" {
			t.Fatalf("%d holes: %s", n, probs)
		}
		if rings := n + 1; steps > 4*rings {
			t.Errorf("%d holes: the ring relation pass took %d steps for %d rings, want at most %d (4 per ring)", n, steps, rings, 4*rings)
		}
	}
}

// nestedHoles returns a MultiPolygon whose first polygon A has m small
// holes that lie inside the innermost of k nested polygons P1 ⊃ P2 ⊃ …
// (each inside a hole of the one before), and P1 lies inside A: invalid
// (P1 overlaps A), but every hole of A lies 2k rings deep.
func nestedHoles(m, k int) []byte {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	square := func(w float64, cw bool) string {
		pts := [][2]float64{{-w, -w}, {w, -w}, {w, w}, {-w, w}, {-w, -w}}
		if cw {
			pts = [][2]float64{{-w, -w}, {-w, w}, {w, w}, {w, -w}, {-w, -w}}
		}
		var b strings.Builder
		b.WriteString("[")
		for i, q := range pts {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("[" + f(q[0]) + "," + f(q[1]) + "]")
		}
		b.WriteString("]")
		return b.String()
	}
	var b strings.Builder
	b.WriteString(`{"type":"MultiPolygon","coordinates":[[[[-170,-80],[170,-80],[170,80],[-170,80],[-170,-80]]`)
	for i := range m {
		x, y := -15+0.5*float64(i%60), -15+0.5*float64(i/60)
		b.WriteString(",[[" + f(x) + "," + f(y) + "],[" + f(x) + "," + f(y+0.2) + "],[" + f(x+0.2) + "," + f(y) + "],[" + f(x) + "," + f(y) + "]]")
	}
	b.WriteString("]")
	for i := range k {
		w := 70 - 0.1*float64(i)
		b.WriteString(",[" + square(w, false) + "," + square(w-0.05, true) + "]")
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// TestNestedHolesLinearRelationPass: finding whether a hole's enclosing
// ring lies inside its own shell walked up the chain of enclosing rings,
// 2k steps for each of m holes.
func TestNestedHolesLinearRelationPass(t *testing.T) {
	m, k := 1000, 500
	probs, steps := relationSteps(t, nestedHoles(m, k))
	if !strings.Contains(probs, "/coordinates/1: "+RuleMultiPolygonOverlap) {
		t.Fatalf("problems %q, want %s at /coordinates/1", probs, RuleMultiPolygonOverlap)
	}
	if rings := 1 + m + 2*k; steps > 4*rings {
		t.Errorf("the ring relation pass took %d steps for %d rings, want at most %d (4 per ring)", steps, rings, 4*rings)
	}
}
