package geojson

import (
	"math"
	"math/rand/v2"
	"testing"
)

func naiveOrient(a, b, c pt) int {
	d := (b.x-a.x)*(c.y-a.y) - (b.y-a.y)*(c.x-a.x)
	switch {
	case d > 0:
		return 1
	case d < 0:
		return -1
	}
	return 0
}

// TestOrientExact compares the filtered orientation test with exact
// rational arithmetic on nearly collinear triples, where plain floating
// point often gets the sign wrong.
func TestOrientExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	naiveWrong := 0
	for range 2000 {
		a := pt{rng.Float64()*360 - 180, rng.Float64()*180 - 90}
		b := pt{rng.Float64()*360 - 180, rng.Float64()*180 - 90}
		s := rng.Float64()*3 - 1
		c := pt{a.x + s*(b.x-a.x), a.y + s*(b.y-a.y)} // collinear up to rounding
		if rng.IntN(4) == 0 {
			c.x = math.Nextafter(c.x, math.Inf(1))
		}
		want := orientExact(a, b, c)
		if got := orient(a, b, c); got != want {
			t.Fatalf("orient(%v, %v, %v) = %d, exact %d", a, b, c, got, want)
		}
		if got := orient(b, a, c); got != -want {
			t.Fatalf("orient is not antisymmetric for %v %v %v", a, b, c)
		}
		if naiveOrient(a, b, c) != want {
			naiveWrong++
		}
	}
	if naiveWrong == 0 {
		t.Error("the test triples are too easy: plain floating point never erred")
	}
	t.Logf("plain floating point erred on %d of 2000 triples", naiveWrong)
}

func TestOrientCases(t *testing.T) {
	tiny := math.SmallestNonzeroFloat64
	cases := []struct {
		a, b, c pt
		want    int
	}{
		{pt{0, 0}, pt{1, 0}, pt{0, 1}, 1},
		{pt{0, 0}, pt{1, 0}, pt{0, -1}, -1},
		{pt{0, 0}, pt{1, 1}, pt{2, 2}, 0},
		{pt{0, 0}, pt{1, 0}, pt{2, tiny}, 1}, // products underflow
		{pt{0, 0}, pt{tiny, tiny}, pt{2 * tiny, 2 * tiny}, 0},
		{pt{0.1, 0.1}, pt{0.3, 0.3}, pt{0.7, 0.7}, orientExact(pt{0.1, 0.1}, pt{0.3, 0.3}, pt{0.7, 0.7})},
		{pt{1e300, 1e300}, pt{-1e300, -1e300}, pt{1e300, -1e300}, 1}, // products overflow
	}
	for _, c := range cases {
		if got := orient(c.a, c.b, c.c); got != c.want {
			t.Errorf("orient(%v, %v, %v) = %d, want %d", c.a, c.b, c.c, got, c.want)
		}
	}
}

func TestIntersect(t *testing.T) {
	cases := []struct {
		a, b, c, d pt
		want       contact
		at         pt
	}{
		{pt{0, 0}, pt{2, 2}, pt{0, 2}, pt{2, 0}, cCross, pt{}},
		{pt{0, 0}, pt{2, 0}, pt{3, 0}, pt{4, 0}, cNone, pt{}},
		{pt{0, 0}, pt{2, 0}, pt{2, 0}, pt{4, 0}, cTouch, pt{2, 0}},
		{pt{0, 0}, pt{2, 0}, pt{1, 0}, pt{4, 0}, cOverlap, pt{}},
		{pt{0, 0}, pt{2, 0}, pt{1, 0}, pt{1, 3}, cTouch, pt{1, 0}},
		{pt{0, 0}, pt{2, 0}, pt{1, 1e-300}, pt{1, 3}, cNone, pt{}},
		{pt{0, 0}, pt{0, 2}, pt{0, 1}, pt{0, 5}, cOverlap, pt{}},
		{pt{0, 0}, pt{1, 1}, pt{2, 2}, pt{3, 3}, cNone, pt{}},
	}
	for _, c := range cases {
		got, at := intersect(c.a, c.b, c.c, c.d)
		if got != c.want || (got == cTouch && at != c.at) {
			t.Errorf("intersect(%v %v, %v %v) = %v at %v, want %v at %v", c.a, c.b, c.c, c.d, got, at, c.want, c.at)
		}
		if got2, _ := intersect(c.c, c.d, c.a, c.b); got2 != got {
			t.Errorf("intersect is not symmetric for %v", c)
		}
	}
}

// TestStaticFilter checks the sweep's static orientation filter against
// exact arithmetic on nearly collinear triples in boxes of many sizes and
// places: whenever it decides, it decides right, and it does decide
// triples far from collinear.
func TestStaticFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	decided, wrongNaive := 0, 0
	for range 20000 {
		// A box of width 2^ex at a centre up to 2^ec, inside GeoJSON's
		// range or far outside it.
		w := math.Ldexp(1, rng.IntN(80)-60)
		cx := math.Ldexp(rng.Float64()-0.5, rng.IntN(20))
		cy := math.Ldexp(rng.Float64()-0.5, rng.IntN(20))
		in := func() pt { return pt{cx + w*rng.Float64(), cy + w*rng.Float64()} }
		a, b := in(), in()
		c := in()
		if rng.IntN(2) == 0 {
			f := rng.Float64()
			c = pt{a.x + f*(b.x-a.x), a.y + f*(b.y-a.y)} // collinear up to rounding
			for range rng.IntN(3) {
				c.y = math.Nextafter(c.y, math.Inf(1))
			}
		}
		xlo, xhi := min(a.x, b.x, c.x), max(a.x, b.x, c.x)
		ylo, yhi := min(a.y, b.y, c.y), max(a.y, b.y, c.y)
		s := sweeper{filter: staticFilter(xlo, xhi, ylo, yhi)}
		want := orientExact(a, b, c)
		for _, tr := range [][3]pt{{a, b, c}, {b, c, a}, {c, a, b}} {
			q := s.quick(tr[0], tr[1], tr[2])
			if q != 0 && q != want {
				t.Fatalf("quick(%v, %v, %v) = %d, exact %d (filter %g)", tr[0], tr[1], tr[2], q, want, s.filter)
			}
			if q != 0 {
				decided++
			}
			if got := s.orient(tr[0], tr[1], tr[2]); got != want {
				t.Fatalf("sweeper.orient(%v, %v, %v) = %d, exact %d", tr[0], tr[1], tr[2], got, want)
			}
		}
		if naiveOrient(a, b, c) != want {
			wrongNaive++
		}
	}
	if decided < 20000 || wrongNaive == 0 {
		t.Fatalf("the filter decided %d of 60000 calls, naive arithmetic was wrong %d times: the test does not test", decided, wrongNaive)
	}
	if f := staticFilter(0, 1, 0, 0); f != 0 {
		t.Errorf("a flat box has a filter: %g", f)
	}
	if f := staticFilter(0, math.Inf(1), 0, 1); f != 0 {
		t.Errorf("an infinite box has a filter: %g", f)
	}
}
