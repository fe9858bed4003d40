package geojson

import "math"

// This file holds the adaptive stages of orient: an exact rescaling by
// powers of two, so that the floating-point filter works at every scale,
// and Shewchuk's exact expansion arithmetic ("Adaptive Precision
// Floating-Point Arithmetic and Fast Robust Geometric Predicates", 1997)
// for nearly collinear points. Neither allocates.

// twoSum returns x = fl(a+b) and the rounding error y, with a+b = x+y
// exactly (Knuth). Exact also when the result is subnormal; only overflow
// breaks it.
func twoSum(a, b float64) (x, y float64) {
	x = a + b
	bv := x - a
	av := x - bv
	return x, (a - av) + (b - bv)
}

// twoProduct returns x = fl(a·b) and the error y, with a·b = x+y exactly
// unless the error underflows, which the caller rules out.
func twoProduct(a, b float64) (x, y float64) {
	x = a * b
	return x, math.FMA(a, b, -x)
}

// minExactProduct bounds the products whose rounding error twoProduct
// returns exactly: the error of a product p is a multiple of 2^-1074 when
// |p| ≥ 2^(-1074+106).
const minExactProduct = 0x1p-968

// up2 returns the power-of-two exponent k ≥ 0 such that m·2^k lies in
// [0.5, 1), or 0 when m ≥ 0.5: scaling up only, which is exact.
func up2(m float64) int {
	if m >= 0.5 {
		return 0
	}
	_, e := math.Frexp(m) // m = f·2^e, f in [0.5, 1)
	return -e
}

// orientAdaptive decides orient(a, b, c) when the plain filter could not,
// and the differences are not all zero on one axis. It reports false only
// when a difference is 2^500 or more (or overflows), far beyond GeoJSON
// coordinates: then orientExact decides.
//
// The determinant is det(u, v) = ux·vy − uy·vx with u = a−c, v = b−c.
// Scaling the x components of both vectors by 2^kx, the y components by
// 2^ky, u by 2^i and v by 2^j multiplies det by 2^(kx+ky+i+j) > 0: its
// sign is unchanged. With the differences computed exactly as hi+lo
// pairs, and every scaling up and by a power of two, the scaled values
// are exact too. Scaling first each axis, then each vector, so that its
// largest component lies in [0.5, 1) (or leaving it when larger, at most
// 2^10 for GeoJSON coordinates), makes one of the two products at least
// 1/4: if ux and vy (or uy and vx) are the largest components of their
// vectors, their product is; otherwise both vectors are largest on one
// axis, say x, and the other axis' largest component meets one of them
// in a product. So the filter's error bound holds (no product near
// underflow can change the sign), and the filter decides as it would for
// the same shape at unit scale.
func orientAdaptive(a, b, c pt) (int, bool) {
	uxh, uxl := twoSum(a.x, -c.x)
	vxh, vxl := twoSum(b.x, -c.x)
	uyh, uyl := twoSum(a.y, -c.y)
	vyh, vyl := twoSum(b.y, -c.y)
	mx := max(math.Abs(uxh), math.Abs(vxh))
	my := max(math.Abs(uyh), math.Abs(vyh))
	if !(mx < 0x1p500 && my < 0x1p500) || mx == 0 || my == 0 {
		return 0, false // huge (or NaN); an axis of zeros was decided by orient
	}
	kx, ky := up2(mx), up2(my)
	uxh, uxl, vxh, vxl = math.Ldexp(uxh, kx), math.Ldexp(uxl, kx), math.Ldexp(vxh, kx), math.Ldexp(vxl, kx)
	uyh, uyl, vyh, vyl = math.Ldexp(uyh, ky), math.Ldexp(uyl, ky), math.Ldexp(vyh, ky), math.Ldexp(vyl, ky)
	if i := up2(max(math.Abs(uxh), math.Abs(uyh))); i > 0 {
		uxh, uxl, uyh, uyl = math.Ldexp(uxh, i), math.Ldexp(uxl, i), math.Ldexp(uyh, i), math.Ldexp(uyl, i)
	}
	if j := up2(max(math.Abs(vxh), math.Abs(vyh))); j > 0 {
		vxh, vxl, vyh, vyl = math.Ldexp(vxh, j), math.Ldexp(vxl, j), math.Ldexp(vyh, j), math.Ldexp(vyl, j)
	}

	detl, detr := uxh*vyh, uyh*vxh
	det := detl - detr
	if math.Abs(det) >= errBoundA*(math.Abs(detl)+math.Abs(detr)) {
		if det > 0 {
			return 1, true
		}
		return -1, true
	}

	// Nearly collinear: sum the eight partial products exactly. A product
	// below minExactProduct may have lost its rounding error to
	// underflow; it is set aside ("small") and, unless the rest decides,
	// summed again after scaling everything left by 2^tailShift.
	var e expansion
	var small [8][2]float64
	ns := 0
	for _, t := range [8][3]float64{
		{uxh, vyh, 1}, {uxh, vyl, 1}, {uxl, vyh, 1}, {uxl, vyl, 1},
		{uyh, vxh, -1}, {uyh, vxl, -1}, {uyl, vxh, -1}, {uyl, vxl, -1},
	} {
		if t[0] == 0 || t[1] == 0 {
			continue
		}
		x, y := twoProduct(t[0], t[1])
		if math.Abs(x) < minExactProduct {
			small[ns] = [2]float64{t[2] * t[0], t[1]}
			ns++
			continue
		}
		e.add(t[2] * x)
		e.add(t[2] * y)
	}
	// Each small product is below 2^-967 (its rounded value is below
	// 2^-968, its error below 2^-1074), so all eight below 2^-964; the
	// exact sum e is more than half its largest component.
	if ns == 0 || (e.n > 0 && math.Abs(e.c[e.n-1]) > 0x1p-963) {
		return e.sign(), true
	}
	// Everything left is below 2^-963 and, being a product of two floats,
	// at least 2^-2148: scaled by 2^1964 it lies in [2^-184, 2^1001],
	// where products are exact. Scaling the expansion is exact; each small
	// product's factors are scaled so that neither overflows.
	for i := range e.n {
		e.c[i] = math.Ldexp(e.c[i], tailShift)
	}
	for _, f := range small[:ns] {
		_, ef := math.Frexp(f[0]) // |f[0]| < 2^ef
		sf := min(tailShift, 1020-ef)
		x, y := twoProduct(math.Ldexp(f[0], sf), math.Ldexp(f[1], tailShift-sf))
		if math.Abs(x) < minExactProduct || math.IsInf(x, 0) {
			return 0, false // cannot happen, by the bounds above
		}
		e.add(x)
		e.add(y)
	}
	return e.sign(), true
}

// tailShift scales the sub-2^-963 tail of a determinant into the range
// where products are exact.
const tailShift = 1964

// expansion is a sum of floating-point components that do not overlap,
// in increasing order of magnitude (Shewchuk's GROW-EXPANSION with zero
// elimination): its sign is the sign of its last component. Each add
// adds at most one component: 32 hold the 16 parts of the eight products
// of orientAdaptive and their 16 rescaled parts.
type expansion struct {
	c [32]float64
	n int
}

// add adds f to the expansion exactly.
func (e *expansion) add(f float64) {
	q := f
	n := 0
	for i := range e.n {
		var h float64
		q, h = twoSum(q, e.c[i])
		if h != 0 {
			e.c[n] = h
			n++
		}
	}
	if q != 0 {
		e.c[n] = q
		n++
	}
	e.n = n
}

// sign returns the sign of the sum.
func (e *expansion) sign() int {
	switch {
	case e.n == 0:
		return 0
	case e.c[e.n-1] > 0:
		return 1
	}
	return -1
}
