package geojson

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// scaledTriples returns nearly collinear (and some plainly oriented)
// triples of the kinds that made tiny shapes costly: the same shapes at unit
// scale, at 1e-200, 1e-300 and among subnormals, flat shapes (x at unit
// scale, y tiny), and tiny offsets from unit-scale points.
func scaledTriples(seed uint64, n int) [][3]pt {
	rng := rand.New(rand.NewPCG(seed, 5))
	scales := []float64{1, 1e-200, 1e-300, 1e-310, 0x1p-1060}
	var out [][3]pt
	for range n {
		a := pt{rng.Float64()*2 - 1, rng.Float64()*2 - 1}
		b := pt{rng.Float64()*2 - 1, rng.Float64()*2 - 1}
		s := rng.Float64()*3 - 1
		c := pt{a.x + s*(b.x-a.x), a.y + s*(b.y-a.y)} // collinear up to rounding
		if rng.IntN(3) == 0 {
			c.y = math.Nextafter(c.y, math.Inf(1))
		}
		if rng.IntN(8) == 0 {
			c = pt{rng.Float64()*2 - 1, rng.Float64()*2 - 1}
		}
		tr := [3]pt{a, b, c}
		switch k := rng.IntN(len(scales) + 2); {
		case k < len(scales): // the same triple at another scale
			for i := range tr {
				tr[i] = pt{tr[i].x * scales[k], tr[i].y * scales[k]}
			}
		case k == len(scales): // flat: y squeezed to 1e-300
			for i := range tr {
				tr[i].y *= 1e-300
			}
		default: // tiny offsets from a unit-scale point
			o := pt{rng.Float64()*360 - 180, rng.Float64()*180 - 90}
			for i := range tr {
				tr[i] = pt{o.x + tr[i].x*1e-12, o.y + tr[i].y*1e-12}
			}
		}
		out = append(out, tr)
	}
	return out
}

// TestOrientAtEveryScale compares orient with exact rational arithmetic
// on triples at every scale, mixed scales included.
func TestOrientAtEveryScale(t *testing.T) {
	zeros := 0
	for _, tr := range scaledTriples(1, 20000) {
		a, b, c := tr[0], tr[1], tr[2]
		want := orientExact(a, b, c)
		if want == 0 {
			zeros++
		}
		for _, q := range [][3]pt{{a, b, c}, {b, c, a}, {c, a, b}} {
			if got := orient(q[0], q[1], q[2]); got != want {
				t.Fatalf("orient(%v, %v, %v) = %d, exact %d", q[0], q[1], q[2], got, want)
			}
		}
		if got := orient(b, a, c); got != -want {
			t.Fatalf("orient(%v, %v, %v) = %d, exact %d", b, a, c, got, -want)
		}
	}
	t.Logf("%d of 20000 triples exactly collinear", zeros)
	// Random mixed scales: a unit-scale point and two points near the
	// line from it through the origin, at scales down to subnormal.
	rng := rand.New(rand.NewPCG(9, 9))
	mixed := 0
	for range 20000 {
		a := pt{rng.Float64()*360 - 180, rng.Float64()*180 - 90}
		sc := []float64{1e-300, 1e-310, 0x1p-1070, 1e-150, 1}
		s1, s2 := rng.Float64()*sc[rng.IntN(len(sc))], rng.Float64()*sc[rng.IntN(len(sc))]
		b, c := pt{a.x * s1, a.y * s1}, pt{a.x * s2, a.y * s2}
		if rng.IntN(2) == 0 {
			c.x = math.Nextafter(c.x, math.Inf(1))
		}
		if rng.IntN(4) == 0 {
			a.y = math.Nextafter(a.y, 0)
		}
		want := orientExact(a, b, c)
		if got := orient(a, b, c); got != want {
			t.Fatalf("orient(%v, %v, %v) = %d, exact %d", a, b, c, got, want)
		}
		if got := orient(c, a, b); got != want {
			t.Fatalf("orient(%v, %v, %v) = %d, exact %d", c, a, b, got, want)
		}
		if want == 0 {
			mixed++
		}
	}
	t.Logf("%d of 20000 mixed-scale triples exactly collinear", mixed)
	for _, tr := range mixedTriples() {
		for _, q := range [][3]pt{{tr[0], tr[1], tr[2]}, {tr[1], tr[2], tr[0]}, {tr[2], tr[0], tr[1]}, {tr[1], tr[0], tr[2]}} {
			if got, want := orient(q[0], q[1], q[2]), orientExact(q[0], q[1], q[2]); got != want {
				t.Errorf("orient(%v, %v, %v) = %d, exact %d", q[0], q[1], q[2], got, want)
			}
		}
	}
}

// mixedTriples are nearly or exactly collinear triples mixing scales
// within one triple: the rounding errors of their differences lie far
// below the differences, near or in the subnormal range.
func mixedTriples() [][3]pt {
	tiny := math.SmallestNonzeroFloat64
	e := 1e-300
	return [][3]pt{
		{{1, 1}, {1e-300, 1e-300}, {0, 0}},
		{{1, 1}, {1e-300, 1e-300}, {2e-300, 2e-300}},
		{{1, 1}, {3e-300, 3e-300}, {1e-300, 1e-300}},
		{{1, 1}, {tiny, tiny}, {0, 0}},
		{{1, 1}, {tiny, tiny}, {2 * tiny, 2 * tiny}},
		{{1, 1}, {3 * tiny, 3 * tiny}, {2 * tiny, 2 * tiny}},
		{{1, 1 + 0x1p-52}, {1e-300, 1e-300}, {0, 0}},
		{{1, 1 + 0x1p-52}, {1e-300, 1e-300}, {5e-301, 5e-301}},
		{{180, 90}, {2 * e, e}, {4 * e, 2 * e}},
		{{180, 90}, {2 * tiny, tiny}, {4 * tiny, 2 * tiny}},
		{{180, 90}, {2 * tiny, tiny}, {4 * tiny, 3 * tiny}},
		{{1, 1e-300}, {2, 2e-300}, {3, 3e-300}},
		{{1, 1e-300}, {2, 2e-300}, {3, math.Nextafter(3e-300, 1)}},
		{{0, 0}, {tiny, 0}, {0, tiny}},
		{{180, 90}, {-180, -90}, {tiny, 0}},
		{{180, 90}, {-180, -90}, {0, 0}},
		{{180, 90}, {-180, -90}, {2 * tiny, tiny}},
		{{1e-300, 1}, {1e-300, 2}, {1e-300 + 1e-316, 3}},
		{{1 + 0x1p-52, 1}, {e, e}, {0.5 + 0x1p-53, 0.5}},
		{{90, 45}, {e, 1e-300 / 2}, {tiny * 6, tiny * 3}},
	}
}

// TestOrientMixedScalesAllocate: even triples mixing scales some 300
// orders of magnitude apart are decided in floating point.
func TestOrientMixedScalesAllocate(t *testing.T) {
	trs := mixedTriples()
	allocs := testing.AllocsPerRun(3, func() {
		for _, tr := range trs {
			orient(tr[0], tr[1], tr[2])
			orient(tr[1], tr[2], tr[0])
			orient(tr[2], tr[0], tr[1])
		}
	})
	if allocs > 0 {
		t.Errorf("orient allocated %.0f times over %d mixed-scale triples, want 0", allocs, len(trs))
	}
}

// TestOrientTinyScaleAllocates checks that orientation at tiny scales
// stays in floating point: no allocation on nearly collinear triples at
// any scale (before, every one at 1e-200 went to math/big).
func TestOrientTinyScaleAllocates(t *testing.T) {
	trs := scaledTriples(2, 2000)
	allocs := testing.AllocsPerRun(3, func() {
		for _, tr := range trs {
			orient(tr[0], tr[1], tr[2])
		}
	})
	if allocs > 0 {
		t.Errorf("orient allocated %.0f times over %d triples at tiny and unit scales, want 0", allocs, len(trs))
	}
}

// TestTinyCircleAllocations: the 21,000-vertex circle
// at scale 1e-200 made 6 million allocations (751 MB) against 39 at unit
// scale. It must allocate no more than twice as often as the unit-scale
// circle, plus a few. Both are counted cold, after two collections have
// emptied geojson's pools: warm counts depend on what the pools kept, and
// under the race detector sync.Pool drops a random share of what it is
// given, so a warm count is not repeatable there.
func TestTinyCircleAllocations(t *testing.T) {
	allocs := func(data []byte) float64 {
		if err := Validate(data, Options{}); err != nil {
			t.Fatal(err)
		}
		var most uint64
		for range 3 {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			_ = Validate(data, Options{})
			runtime.ReadMemStats(&after)
			most = max(most, after.Mallocs-before.Mallocs)
		}
		return float64(most)
	}
	unit := allocs(testkit.Circle(21_000, 1))
	tiny := allocs(testkit.Circle(21_000, 1e-200))
	t.Logf("cold: %.0f tiny, %.0f unit", tiny, unit)
	if tiny > 2*unit+10 {
		t.Errorf("Validate of the 21,000-vertex circle: %.0f allocations at scale 1e-200, %.0f at scale 1; want at most %.0f",
			tiny, unit, 2*unit+10)
	}
}

// FuzzOrient compares orient with exact rational arithmetic on any finite
// coordinates.
//
//	go test -run '^$' -fuzz FuzzOrient -fuzztime 60s ./geojson
func FuzzOrient(f *testing.F) {
	for _, tr := range scaledTriples(3, 64) {
		f.Add(tr[0].x, tr[0].y, tr[1].x, tr[1].y, tr[2].x, tr[2].y)
	}
	f.Add(1.0, 1.0, 1e-300, 1e-300, 0.0, 0.0)
	f.Fuzz(func(t *testing.T, ax, ay, bx, by, cx, cy float64) {
		a, b, c := pt{ax, ay}, pt{bx, by}, pt{cx, cy}
		for _, v := range []float64{ax, ay, bx, by, cx, cy} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return
			}
		}
		if got, want := orient(a, b, c), orientExact(a, b, c); got != want {
			t.Fatalf("orient(%v, %v, %v) = %d, exact %d", a, b, c, got, want)
		}
		// And a nearly collinear triple made from the inputs: c on the
		// line ab up to rounding, at a's scale, nudged by cx's last bits.
		frac := math.Mod(math.Abs(cx), 4) - 1
		d := pt{ax + frac*(bx-ax), ay + frac*(by-ay)}
		if k := math.Float64bits(cx) % 4; k > 0 {
			d.y = math.Nextafter(d.y, math.Inf(int(k)-2))
		}
		if math.IsNaN(d.x) || math.IsInf(d.x, 0) || math.IsNaN(d.y) || math.IsInf(d.y, 0) {
			return
		}
		if got, want := orient(a, b, d), orientExact(a, b, d); got != want {
			t.Fatalf("orient(%v, %v, %v) = %d, exact %d", a, b, d, got, want)
		}
	})
}
