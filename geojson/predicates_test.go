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
