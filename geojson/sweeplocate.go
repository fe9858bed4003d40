package geojson

// The sweep status's point location: which status segments contain a
// point, and which lie just below and above it, found by descent over the
// block tree or from a hint (a segment near the point).

// locate finds, by descent, the segments containing p (appended to out in
// order) and the nearest segments below and above p.
func (s *sweeper) locate(p pt, out []int32) (on []int32, below, above int32) {
	isBelow := func(t int32) bool { return s.below(t, p) }
	below = nilNode
	first := s.first()
	if b := s.lastBlock(isBelow); b != nilNode {
		below = lastIn(s.items(b), isBelow)
		first = s.next(below)
	}
	above = nilNode
	for t := first; t != nilNode; t = s.next(t) {
		if !s.contains(t, p) {
			above = t
			break
		}
		out = append(out, t)
	}
	return out, below, above
}

// aroundPair is around for segments e0 and e1, which end at p: when they
// are neighbours in the status, the usual case, only the segments just
// outside them need a test.
func (s *sweeper) aroundPair(e0, e1 int32, p pt, out []int32) (on []int32, below, above int32) {
	a0, a1 := s.at[e0], s.at[e1]
	if a0.b != a1.b || (a0.i+1 != a1.i && a1.i+1 != a0.i) {
		return s.around(e0, p, out)
	}
	lo, hi := e0, e1
	if a1.i < a0.i {
		lo, hi = e1, e0
	}
	below, above = s.prev(lo), s.next(hi)
	if s.passed && (below != nilNode && s.contains(below, p) || above != nilNode && s.contains(above, p)) {
		return s.around(e0, p, out)
	}
	return append(out, lo, hi), below, above
}

// around collects the block of segments containing p around node x,
// which contains p, and the segments just below and above the block.
func (s *sweeper) around(x int32, p pt, out []int32) (on []int32, below, above int32) {
	lo := x
	for {
		q := s.prev(lo)
		if q == nilNode || !s.contains(q, p) {
			below = q
			break
		}
		lo = q
	}
	for t := lo; ; {
		out = append(out, t)
		t = s.next(t)
		if t == nilNode || !s.contains(t, p) {
			above = t
			break
		}
	}
	return out, below, above
}

// locateHinted is locate for an event where segments only start, tried
// first next to the ring's segments that continue those starting at p
// (a ring's segments are often close in the status: a zigzag's spikes
// start next to their neighbours): a hint costs two orientation tests, a
// descent one per level.
func (s *sweeper) locateHinted(p pt, out []int32) (on []int32, below, above int32) {
	for _, sg := range s.starts {
		r := s.segs[sg].ring
		n := int32(s.segOff[r+1] - s.segOff[r])
		k := s.segs[sg].k
		kn, kp := k+1, k-1 // the segments after and before sg
		if kn == n {
			kn = 0
		}
		if kp < 0 {
			kp = n - 1
		}
		for _, h := range [2]int32{int32(s.segOff[r]) + kn, int32(s.segOff[r]) + kp} {
			if s.active(h) {
				if on, below, above, ok := s.locateNear(h, p, out); ok {
					return on, below, above
				}
			}
		}
	}
	return s.locate(p, out)
}

// locateNear finds what locate finds when active segment h is next to p:
// the last segment p lies strictly above, or the first it does not. It
// reports false when h is neither.
func (s *sweeper) locateNear(h int32, p pt, out []int32) (on []int32, below, above int32, ok bool) {
	var first int32 // the first segment containing p
	sg := &s.segs[h]
	o := s.quick(sg.a, sg.b, p)
	if o == 0 {
		o = orient(sg.a, sg.b, p)
	}
	if o > 0 {
		below = h
		first = s.next(h)
		if first == nilNode {
			return out, below, nilNode, true
		}
		f := &s.segs[first]
		o := s.quick(f.a, f.b, p)
		if o == 0 {
			o = orient(f.a, f.b, p)
		}
		switch {
		case o > 0:
			return out, nilNode, nilNode, false
		case o < 0:
			return out, below, first, true
		}
	} else {
		below = s.prev(h)
		if below != nilNode {
			b := &s.segs[below]
			if q := s.quick(b.a, b.b, p); q < 0 || q == 0 && orient(b.a, b.b, p) <= 0 {
				return out, nilNode, nilNode, false
			}
		}
		if o < 0 {
			return out, below, h, true
		}
		first = h
	}
	out = append(out, first)
	above = nilNode
	for t := s.next(first); t != nilNode; t = s.next(t) {
		if !s.contains(t, p) {
			above = t
			break
		}
		out = append(out, t)
	}
	return out, below, above, true
}
