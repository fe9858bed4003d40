package geojson

import (
	"math"
	"math/big"
)

// pt is a 2D point (longitude, latitude).
type pt struct{ x, y float64 }

// less orders points lexicographically, x first: the sweep order.
func less(p, q pt) bool { return p.x < q.x || (p.x == q.x && p.y < q.y) }

// errBoundA is Shewchuk's ccwerrboundA, (3 + 16ε)ε with ε = 2⁻⁵³: when
// |det| is at least errBoundA times the sum of the magnitudes of its two
// products, the floating-point sign of det is the exact sign.
const errBoundA = (3 + 16*0x1p-53) * 0x1p-53

// tinyProduct is a bound below which products may have lost accuracy to
// underflow, so the filter does not trust them.
const tinyProduct = 0x1p-900

// hugeProduct is a bound above which products may have overflowed (an
// infinite or NaN sum fails the comparison too).
const hugeProduct = 0x1p1000

// orient returns +1 if c lies to the left of the directed line a→b
// (a, b, c counterclockwise), -1 if to the right, and 0 if the three
// points are collinear. The answer is exact at every scale, in three
// stages: a floating-point filter with Shewchuk's error bound settles
// almost every call; when it cannot (its products underflow, or the
// points are nearly collinear), orientAdaptive rescales the differences
// by powers of two, filters again and, if need be, sums the determinant
// exactly as a floating-point expansion. Rationals (math/big) remain only
// for differences of 2^500 or more, which GeoJSON coordinates never reach.
func orient(a, b, c pt) int {
	acx, bcx := a.x-c.x, b.x-c.x
	acy, bcy := a.y-c.y, b.y-c.y
	detl := acx * bcy
	detr := acy * bcx
	det := detl - detr
	sum := math.Abs(detl) + math.Abs(detr)
	if sum > tinyProduct && sum < hugeProduct && math.Abs(det) >= errBoundA*sum {
		if det > 0 {
			return 1
		}
		return -1
	}
	// A difference of floats is zero exactly when the floats are equal,
	// so these products are exactly zero.
	if (acx == 0 || bcy == 0) && (acy == 0 || bcx == 0) {
		return 0
	}
	if o, ok := orientAdaptive(a, b, c); ok {
		return o
	}
	return orientExact(a, b, c)
}

// staticFilter returns the scale f of the static orientation filter for
// points in the box [xlo, xhi] × [ylo, yhi], for sweeper.orient: when
// |fl(det)·f| > 1, the sign of the determinant orient computes in
// floating point is exact. It returns 0, no filter, when the box is
// degenerate, not finite, or so small or large that the products might
// underflow or overflow.
//
// Every computed difference of coordinates in the box is at most
// dx = fl(xhi−xlo) or dy = fl(yhi−ylo) in magnitude (rounding is
// monotone), so each computed product at most fl(dx·dy) and the sum of
// the two at most fl(2·fl(dx·dy)). Orient's filter decides when |det| is
// at least errBoundA times that sum (and the sum lies between
// tinyProduct and hugeProduct): so whenever |det| ≥ e =
// fl(errBoundA·fl(2·fl(dx·dy))), which bounds errBoundA times the sum,
// and which bounds the sum from below, |det| being at most the sum. f is
// 1/(2e), rounded, so |fl(det·f)| > 1 implies |det| > e.
func staticFilter(xlo, xhi, ylo, yhi float64) float64 {
	dx, dy := xhi-xlo, yhi-ylo
	p := 2 * float64(dx*dy)
	e := float64(errBoundA * p)
	if !(dx > 0 && dy > 0 && p < hugeProduct && e > tinyProduct) {
		return 0 // also NaN
	}
	return 1 / (2 * e)
}

// orient is orient for points of the sweep's rings: a static filter
// (staticFilter) settles most calls in a few instructions, inline; the
// rest go to orient.
func (s *sweeper) orient(a, b, c pt) int {
	if o := s.quick(a, b, c); o != 0 {
		return o
	}
	return orient(a, b, c)
}

// quick returns orient(a, b, c) when the static filter decides it, and
// 0 when it does not: inline, for the hot calls.
func (s *sweeper) quick(a, b, c pt) int {
	d := s.det(a, b, c)
	if d > 1 {
		return 1
	}
	if d < -1 {
		return -1
	}
	return 0
}

// det returns the orientation determinant of a, b, c as orient computes
// it in floating point, scaled by the static filter's s.filter: when it
// is above 1 or below -1, its sign is orient's.
func (s *sweeper) det(a, b, c pt) float64 {
	// The conversions keep the products rounded, as orient's are.
	return (float64((a.x-c.x)*(b.y-c.y)) - float64((a.y-c.y)*(b.x-c.x))) * s.filter
}

// orientExact computes the sign of the orientation determinant with
// exact rational arithmetic.
func orientExact(a, b, c pt) int {
	r := func(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }
	cx, cy := r(c.x), r(c.y)
	acx := new(big.Rat).Sub(r(a.x), cx)
	bcx := new(big.Rat).Sub(r(b.x), cx)
	acy := new(big.Rat).Sub(r(a.y), cy)
	bcy := new(big.Rat).Sub(r(b.y), cy)
	l := new(big.Rat).Mul(acx, bcy)
	rr := new(big.Rat).Mul(acy, bcx)
	return l.Cmp(rr)
}

// contact is how two closed segments meet.
type contact uint8

const (
	cNone    contact = iota // disjoint
	cTouch                  // one common point, an endpoint of at least one segment
	cCross                  // one common point interior to both: a proper crossing
	cOverlap                // collinear with a common part of positive length
)

// intersect classifies how segments ab and cd meet, exactly. For cTouch
// it also returns the common point.
func intersect(a, b, c, d pt) (contact, pt) {
	return intersectFrom(a, b, c, d, orient(a, b, c), orient(a, b, d))
}

// intersectFrom is intersect given o1 = orient(a, b, c) and o2 =
// orient(a, b, d).
func intersectFrom(a, b, c, d pt, o1, o2 int) (contact, pt) {
	if o1*o2 > 0 {
		return cNone, pt{}
	}
	o3, o4 := orient(c, d, a), orient(c, d, b)
	if o3*o4 > 0 {
		return cNone, pt{}
	}
	if o1 == 0 && o2 == 0 {
		// Collinear: compare the lexicographic extents.
		if less(b, a) {
			a, b = b, a
		}
		if less(d, c) {
			c, d = d, c
		}
		lo, hi := a, b
		if less(lo, c) {
			lo = c
		}
		if less(d, hi) {
			hi = d
		}
		switch {
		case less(hi, lo):
			return cNone, pt{}
		case lo == hi:
			return cTouch, lo
		}
		return cOverlap, pt{}
	}
	switch {
	case o1 != 0 && o2 != 0 && o3 != 0 && o4 != 0:
		return cCross, pt{}
	case o1 == 0:
		return cTouch, c
	case o2 == 0:
		return cTouch, d
	case o3 == 0:
		return cTouch, a
	}
	return cTouch, b
}
