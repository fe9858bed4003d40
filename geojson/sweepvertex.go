// A vertex alone at its point, the common case, taken without the general
// event's loops: the ring passes on (one segment ends, one starts), or
// both its segments end, or both start. Anything unusual goes back to the
// general event (sweeper.eventAt).

package geojson

// endPair is event for a vertex alone at its point where both its
// segments, v and w, end, when no other segment passes through the point
// (!s.passed) and the two are neighbours in the status, the usual case:
// they leave it, and the two segments around them, now neighbours, are
// tested. It reports false, having done nothing, when v and w are not
// neighbours.
func (s *sweeper) endPair(v, w int32) (*sweepFault, bool) {
	a0, a1 := s.at[v], s.at[w]
	var below, above int32
	if a0.b == a1.b && (a0.i+1 == a1.i || a1.i+1 == a0.i) {
		lo, hi := v, w
		if a1.i < a0.i {
			lo, hi = w, v
		}
		below, above = s.prev(lo), s.next(hi)
		s.unplace(s.at[lo], 2)
	} else {
		// Neighbours across two blocks, or not neighbours.
		lo, hi := v, w
		if s.next(v) != w {
			if s.next(w) != v {
				return nil, false
			}
			lo, hi = w, v
		}
		below, above = s.prev(lo), s.next(hi)
		s.remove(lo) // in another block than hi, whose slot stays
		s.remove(hi)
	}
	if below == nilNode || above == nilNode {
		return nil, true
	}
	if s.verify && s.cmpSeg(below, above) >= 0 {
		s.inconsistent++
	}
	return s.check(below, above), true
}

// startPair is event for a vertex alone at its point where both its
// segments, v and the one before it, w, start, when no other segment
// passes through the point (!s.passed): they go in between the segments
// just below and above the point, and the new pairs of neighbours are
// tested. It reports false, having done nothing, when a segment passes
// through the point after all.
func (s *sweeper) startPair(p pt, v, w int32) (*sweepFault, bool) {
	// locateHinted, for these two starting segments of one ring: the
	// hints are the segment after the later one and the one before the
	// earlier one.
	r := s.segs[v].ring
	first, end := int32(s.segOff[r]), int32(s.segOff[r+1])
	h1, h2 := v+1, w-1
	if h1 == end {
		h1 = first
	}
	if h2 < first {
		h2 = end - 1
	}
	var below, above int32
	ok := false
	for _, h := range [2]int32{h1, h2} {
		if s.active(h) {
			if s.onBuf, below, above, ok = s.locateNear(h, p, s.onBuf[:0]); ok {
				break
			}
		}
	}
	if !ok {
		s.onBuf, below, above = s.locate(p, s.onBuf[:0])
	}
	if len(s.onBuf) > 0 {
		return nil, false
	}
	// Both start at p, so cmpSeg is decided by one orientation (or, when
	// it is 0, by its tie-breaks). They are consecutive segments of one
	// ring, so they meet only at p unless they are collinear.
	lo, hi := v, w
	a, b := &s.segs[lo], &s.segs[hi]
	o := s.quick(b.a, b.b, a.b)
	if o == 0 {
		o = orient(b.a, b.b, a.b)
	}
	if o > 0 || o == 0 && s.cmpSeg(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	pair := [2]int32{lo, hi}
	s.insertRun(pair[:], below)
	if s.parent[a.ring] == unknownParent {
		s.findParent(lo)
	}
	if below != nilNode {
		if s.verify && s.cmpSeg(below, lo) >= 0 {
			s.inconsistent++
		}
		if f := s.check(below, lo); f != nil {
			return f, true
		}
	}
	if s.verify && s.cmpSeg(lo, hi) >= 0 {
		s.inconsistent++
	}
	if o == 0 {
		if f := s.check(lo, hi); f != nil {
			return f, true
		}
	}
	if above != nilNode {
		if s.verify && s.cmpSeg(hi, above) >= 0 {
			s.inconsistent++
		}
		return s.check(hi, above), true
	}
	return nil, true
}

// passOn is event for a vertex alone at its point where its ring passes
// on, segment ending ending there and starting starting, when no other
// segment passes through the point (!s.passed): starting takes the
// place of ending in the status, and only its new neighbours are
// tested, which is what event does in this case, without its general
// steps.
func (s *sweeper) passOn(ending, starting int32) *sweepFault {
	// The ring's parent is known: it was found at the ring's least
	// vertex, where both its segments start, before this one.
	s.replace(ending, starting)
	below, above := s.prev(starting), s.next(starting)
	if below != nilNode {
		if s.verify && s.cmpSeg(below, starting) >= 0 {
			s.inconsistent++
		}
		if f := s.check(below, starting); f != nil {
			return f
		}
	}
	if above != nilNode {
		if s.verify && s.cmpSeg(starting, above) >= 0 {
			s.inconsistent++
		}
		return s.check(starting, above)
	}
	return nil
}

// prevSeg returns the segment ending at vertex v (the one before it).
func (s *sweeper) prevSeg(v int32) int32 {
	r := s.segs[v].ring
	if int(v) == s.segOff[r] {
		return int32(s.segOff[r+1] - 1)
	}
	return v - 1
}
