package geojson

import (
	"cmp"
	"slices"
)

// This file holds the sweep's checks at a point where rings meet: a ring
// touching itself, rings crossing or sharing a segment there, and touches
// that disconnect a polygon's interior.

// meet checks the rings meeting at p: each ring may have one vertex
// there and no segment passing through; distinct rings touching are
// recorded for the interior connectivity check.
func (s *sweeper) meet(p pt, grp []int32) *sweepFault {
	s.evNum++
	s.grp = s.grp[:0]
	for _, v := range grp {
		ring := s.segs[v].ring
		if s.mark[ring] == s.evNum {
			return &sweepFault{rule: RuleRingSelfIntersection, ring: int(ring), k: int(s.segs[v].k), ring2: -1,
				msg: "the ring touches itself: this vertex repeats an earlier one"}
		}
		s.mark[ring] = s.evNum
		s.grp = append(s.grp, v)
	}
	for _, sg := range s.onBuf {
		q := &s.segs[sg]
		if q.a == p || q.b == p {
			continue
		}
		if s.mark[q.ring] == s.evNum {
			k := -1
			for _, w := range s.grp {
				if s.segs[w].ring == q.ring && s.vertex(q.ring, s.segs[w].k) == p {
					k = int(s.segs[w].k)
				}
			}
			return &sweepFault{rule: RuleRingSelfIntersection, ring: int(q.ring), k: k, ring2: -1,
				msg: "the ring touches itself: a vertex or segment lies on another of its segments"}
		}
		s.mark[q.ring] = s.evNum
		s.grp = append(s.grp, sg)
	}
	if len(s.grp) > 1 {
		if f := s.crossAt(p); f != nil {
			return f
		}
		return s.touch(p)
	}
	return nil
}

// crossAt reports rings of s.grp that cross (rather than touch) at p, or
// share a segment leaving p: their directions at p interleave or
// coincide.
func (s *sweeper) crossAt(p pt) *sweepFault {
	s.dirs = s.dirs[:0]
	for _, e := range s.grp {
		sg := &s.segs[e]
		var q1, q2 pt
		if s.vertex(sg.ring, sg.k) == p {
			n := int32(len(s.rings[sg.ring]))
			q1, q2 = s.vertex(sg.ring, sg.k+1), s.vertex(sg.ring, sg.k+n-1)
		} else {
			q1, q2 = sg.a, sg.b
		}
		s.dirs = append(s.dirs, dir{q1, sg.ring}, dir{q2, sg.ring})
	}
	return s.interleave(p, s.dirs)
}

// dir is a ring's edge leaving a point, given by its other endpoint.
type dir struct {
	q    pt
	ring int32
}

// interleave sorts dirs around p and reports two rings that cross at p
// or leave it along the same direction. Each ring has exactly two
// entries.
func (s *sweeper) interleave(p pt, dirs []dir) *sweepFault {
	half := func(q pt) int {
		if q.y > p.y || (q.y == p.y && q.x > p.x) {
			return 0
		}
		return 1
	}
	slices.SortFunc(dirs, func(a, b dir) int {
		if ha, hb := half(a.q), half(b.q); ha != hb {
			return ha - hb
		}
		return -orient(p, a.q, b.q)
	})
	n := len(dirs)
	for i := range n {
		a, b := dirs[i], dirs[(i+1)%n]
		if a.ring != b.ring && half(a.q) == half(b.q) && orient(p, a.q, b.q) == 0 {
			return s.ringsFault(p, a.ring, b.ring, cOverlap)
		}
	}
	// The rings touch without crossing exactly when their labels, read
	// around p, nest like parentheses. Reducing adjacent equal labels
	// leaves, on crossing, a sequence whose first two labels cross.
	stk := s.labels[:0]
	for _, d := range dirs {
		if len(stk) > 0 && stk[len(stk)-1] == d.ring {
			stk = stk[:len(stk)-1]
		} else {
			stk = append(stk, d.ring)
		}
	}
	s.labels = stk
	if len(stk) > 0 {
		return s.ringsFault(p, stk[0], stk[1], cCross)
	}
	return nil
}

// ringsFault is the fault of rings a and b crossing or overlapping at p.
func (s *sweeper) ringsFault(p pt, a, b int32, c contact) *sweepFault {
	if a > b {
		a, b = b, a
	}
	rule, msg := RuleRingIntersection, "two rings cross"
	if c == cOverlap {
		msg = "two rings share a segment"
	}
	if s.poly[a] != s.poly[b] {
		rule, msg = RuleMultiPolygonOverlap, "rings of two different polygons cross, so the polygons overlap"
		if c == cOverlap {
			msg = "two polygons share a segment (they may touch only at points)"
		}
	}
	f := &sweepFault{rule: rule, ring: int(b), k: -1, ring2: int(a), msg: msg}
	for _, e := range s.grp { // point at b's vertex at p, if it has one
		if sg := &s.segs[e]; sg.ring == b && s.vertex(b, sg.k) == p {
			f.k = int(sg.k)
		}
	}
	return f
}

// touch records that the rings in s.grp (vertices or segments, all of
// different rings) meet at p, and reports a disconnected interior when
// the touches of one polygon's rings form a cycle.
func (s *sweeper) touch(p pt) *sweepFault {
	slices.SortFunc(s.grp, func(a, b int32) int { return cmp.Compare(s.poly[s.segs[a].ring], s.poly[s.segs[b].ring]) })
	for i := 0; i < len(s.grp); {
		j := i + 1
		pa := s.poly[s.segs[s.grp[i]].ring]
		for j < len(s.grp) && s.poly[s.segs[s.grp[j]].ring] == pa {
			j++
		}
		if j-i > 1 {
			node := int32(len(s.uf))
			s.uf = append(s.uf, node)
			for _, b := range s.grp[i:j] {
				if !s.union(s.segs[b].ring, node) {
					continue
				}
				// Point at a vertex lying at p, preferring b's ring.
				at := b
				for _, c := range s.grp[i:j] {
					if s.vertex(s.segs[at].ring, s.segs[at].k) != p {
						at = c
					}
				}
				k := int(s.segs[at].k)
				if s.vertex(s.segs[at].ring, s.segs[at].k) != p {
					k = -1
				}
				return &sweepFault{rule: RuleInteriorDisconnected, ring: int(s.segs[at].ring), k: k, ring2: int(s.segs[s.grp[i]].ring),
					msg: "the rings touch at " + fmtPos([]float64{p.x, p.y}) + " and elsewhere, which disconnects the polygon interior"}
			}
		}
		i = j
	}
	return nil
}
