package geojson

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkEventOrder runs the sweep on rings and checks its events
// afterwards against a plain sort: every vertex once, at its point, in
// sweep order.
func checkEventOrder(t *testing.T, name string, rings [][]pt) {
	t.Helper()
	// run's rings have at least 3 vertices.
	rings = slices.DeleteFunc(slices.Clone(rings), func(r []pt) bool { return len(r) < 3 })
	for _, general := range []bool{false, true} {
		s := sweeper{general: general}
		s.rings = rings
		s.poly = make([]int, len(rings))
		s.run()
		var want []event
		for r, ring := range rings {
			for k, v := range ring {
				want = append(want, mkEvent(v, int32(s.segOff[r]+k), 0))
			}
		}
		sortEventsCmp(want)
		if len(s.evs) != len(want) {
			t.Fatalf("%s: %d events, want %d", name, len(s.evs), len(want))
		}
		seen := make([]bool, len(want))
		for i, e := range s.evs {
			if e.p != want[i].p {
				t.Fatalf("%s (general %v): event %d at %v, want %v", name, general, i, e.p, want[i].p)
			}
			if seen[e.id()] {
				t.Fatalf("%s: vertex %d twice", name, e.id())
			}
			seen[e.id()] = true
			r := s.segs[e.id()].ring
			k := int(e.id()) - s.segOff[r]
			if rings[r][k] != e.p {
				t.Fatalf("%s: event %d: vertex %d of ring %d is %v, not %v", name, i, k, r, rings[r][k], e.p)
			}
			// The shape bits, against the segments at the vertex.
			up, prevUp, first := s.segs[e.id()].a == e.p, s.segs[s.prevSeg(e.id())].b == e.p, k == 0
			if up != (e.kind()&evUp != 0) || prevUp != (e.kind()&evPrevUp != 0) || first != (e.kind()&evFirst != 0) {
				t.Fatalf("%s: vertex %d of ring %d: kind %b, want up %v, prevUp %v, first %v", name, k, r, e.kind(), up, prevUp, first)
			}
		}
	}
}

// zigzagRing is testkit.Polygon's ring: n vertices around (10, 50), every
// other one pulled in to radius 0.8*r, rounded to 10^-digits.
func zigzagRing(n int, r float64, digits int, phase float64) []pt {
	scale := math.Pow(10, float64(digits))
	var ring []pt
	for k := range n {
		rr := r
		if k%2 == 1 {
			rr = 0.8 * r
		}
		a := 2*math.Pi*float64(k)/float64(n) + phase
		ring = append(ring, pt{math.Round((10+rr*math.Cos(a))*scale) / scale, math.Round((50+rr*math.Sin(a))*scale) / scale})
	}
	return cleanRing(ring)
}

func TestEventsByShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	checkEventOrder(t, "empty", nil)
	checkEventOrder(t, "triangle", [][]pt{{{0, 0}, {1, 0}, {0, 1}}})
	for _, n := range []int{62, 64, 66, 100, 1000, 10000} {
		for _, digits := range []int{0, 2, 9} {
			for _, phase := range []float64{0, math.Pi / 2, 0.1} {
				checkEventOrder(t, "zigzag", [][]pt{zigzagRing(n, 1, digits, phase)})
				checkEventOrder(t, "zigzag, two rings", [][]pt{zigzagRing(n, 1, digits, phase), zigzagRing(n/2+1, 0.5, digits, -phase)})
			}
		}
	}
	for range 300 {
		// Random rings: random points, points on a few x values (ties in
		// x, equal points in different rings), and combs (a vertex
		// kind changing at every step, like the zigzag, with runs of
		// every length).
		var rings [][]pt
		for range 1 + rng.IntN(4) {
			n := 3 + rng.IntN(300)
			var ring []pt
			kind := rng.IntN(3)
			for k := range n {
				var p pt
				switch kind {
				case 0:
					p = pt{rng.NormFloat64(), rng.NormFloat64()}
				case 1:
					p = pt{float64(rng.IntN(5)), float64(rng.IntN(50))}
					if p.x == 0 && rng.IntN(2) == 0 {
						p.x = math.Copysign(0, -1)
					}
				default:
					p = pt{float64(k / (1 + rng.IntN(4))), float64(k % 7)}
					if k%2 == 1 {
						p.x += 0.5
					}
				}
				ring = append(ring, p)
			}
			if ring = cleanRing(ring); len(ring) >= 3 {
				rings = append(rings, ring)
			}
		}
		checkEventOrder(t, "random", rings)
	}
}

// TestEventsByShapeRuns checks that the zigzag's events make a few runs
// for mergeRuns, which is what laying them out by shape is for.
func TestEventsByShapeRuns(t *testing.T) {
	s := sweeper{}
	s.rings = [][]pt{zigzagRing(10000, 1, 9, 0)}
	s.poly = []int{0}
	s.run()
	if !slices.IsSortedFunc(s.evs, func(e, f event) int {
		if lessEvent(e, f) {
			return -1
		}
		if lessEvent(f, e) {
			return 1
		}
		return 0
	}) {
		t.Fatal("events not sorted")
	}
	if runs := len(s.count); runs != 1 {
		t.Fatalf("mergeRuns left %d runs (s.count), want 1: it did not sort the zigzag", runs)
	}
}
