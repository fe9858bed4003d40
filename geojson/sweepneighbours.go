package geojson

// This file holds the sweep's test of two segments that are neighbours in
// the status: whether they cross, overlap or touch, and which rule that
// breaks.

// check tests neighbouring segments i and j (active, not nilNode) for a
// forbidden contact.
func (s *sweeper) check(i, j int32) *sweepFault {
	a, b := &s.segs[i], &s.segs[j]
	if a.ring == b.ring {
		// Consecutive and not collinear, they meet only at their common
		// vertex, which one orientation test shows (intersect takes
		// four).
		n := int32(len(s.rings[a.ring]))
		switch {
		case follows(a.k, b.k, n): // b leaves a's end for vertex b.k+1
			if c := s.vertex(b.ring, b.k+1); s.quick(a.a, a.b, c) != 0 || orient(a.a, a.b, c) != 0 {
				return nil
			}
		case follows(b.k, a.k, n):
			if c := s.vertex(a.ring, a.k+1); s.quick(b.a, b.b, c) != 0 || orient(b.a, b.b, c) != 0 {
				return nil
			}
		}
	}
	// The first step of intersect, here: most pairs end with it, most
	// of them by the static filter.
	if d1, d2 := s.det(a.a, a.b, b.a), s.det(a.a, a.b, b.b); d1 > 1 && d2 > 1 || d1 < -1 && d2 < -1 {
		return nil
	}
	o1, o2 := s.orient(a.a, a.b, b.a), s.orient(a.a, a.b, b.b)
	if o1*o2 > 0 {
		return nil
	}
	return s.contact(a, b, o1, o2)
}

// contact is check for segments a and b, not apart by one orientation
// test on a's line (o1 and o2, the sides of b.a and b.b).
func (s *sweeper) contact(a, b *seg, o1, o2 int) *sweepFault {
	c, q := intersectFrom(a.a, a.b, b.a, b.b, o1, o2)
	if c == cNone {
		return nil
	}
	if a.ring == b.ring {
		n := int32(len(s.rings[a.ring]))
		adjacent := follows(a.k, b.k, n) || follows(b.k, a.k, n)
		if c == cTouch && adjacent {
			return nil
		}
		k := max(a.k, b.k)
		msg := "the ring crosses itself"
		switch {
		case c == cOverlap:
			msg = "the ring retraces part of itself"
		case c == cTouch:
			msg = "the ring touches itself"
		}
		return &sweepFault{rule: RuleRingSelfIntersection, ring: int(a.ring), k: int(k), ring2: -1, msg: msg}
	}
	if c == cTouch {
		if q != a.a && q != a.b || q != b.a && q != b.b {
			s.passed = true
		}
		return nil
	}
	rule, msg := RuleRingIntersection, "two rings cross"
	if c == cOverlap {
		msg = "two rings share a segment"
	}
	if s.poly[a.ring] != s.poly[b.ring] {
		rule, msg = RuleMultiPolygonOverlap, "rings of two different polygons cross, so the polygons overlap"
		if c == cOverlap {
			msg = "two polygons share a segment (they may touch only at points)"
		}
	}
	r, k := b.ring, b.k
	if a.ring > b.ring {
		r, k = a.ring, a.k
	}
	return &sweepFault{rule: rule, ring: int(r), k: int(k), ring2: int(min(a.ring, b.ring)), msg: msg}
}
