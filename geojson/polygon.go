package geojson

import (
	"slices"
	"strconv"
)

// ringRef locates a sweeper ring in the input.
type ringRef struct {
	poly, ring int     // polygon index (MultiPolygon) and ring index within it
	orig       []int32 // input position index of each vertex
}

// checkPolygons checks OGC validity of a Polygon or MultiPolygon whose
// positions passed every other check, and the right-hand rule when
// strict. Problems point at the polygon's coordinates, a ring or a
// position.
func (p *parser) checkPolygons(g *gnode) {
	// The sweep buffers stay with the parser, pooled with it: taken from
	// a pool of their own for each polygon, they were lost whenever two
	// collections fell between one polygon and the next, as they do while
	// a large body is parsed.
	if p.sweep == nil {
		p.sweep = new(sweeper)
	}
	s := p.sweep
	// Per-ring scratch sized from the ring count, not grown by appends.
	nr := len(g.ends)
	s.rings = slices.Grow(s.rings[:0], nr)
	s.poly = slices.Grow(s.poly[:0], nr)
	s.shell = slices.Grow(s.shell[:0], nr)
	multi := g.typ == tMultiPolygon
	at := func(ref ringRef, k int) []any {
		var e []any
		if multi {
			e = append(e, ref.poly)
		}
		e = append(e, ref.ring)
		if k >= 0 {
			e = append(e, int(ref.orig[k]))
		}
		return e
	}
	a := p.arena[g.start:]
	st := g.stride
	polys := g.polyEnds
	if !multi {
		polys = []int{len(g.ends)}
	}
	// The vertices of all rings share one buffer, and their input
	// indices another: two allocations at most, however many rings.
	s.pts = slices.Grow(s.pts[:0], g.npos)
	origs := slices.Grow(s.origs[:0], g.npos)
	s.ringOff = slices.Grow(s.ringOff[:0], nr)
	// ref locates sweeper ring r in the input.
	ref := func(r int) ringRef {
		off := int(s.ringOff[r])
		return ringRef{poly: s.poly[r], ring: r - int(s.shell[r]), orig: origs[off : off+len(s.rings[r])]}
	}
	r0 := 0
	degenerate := false
	for k, r1 := range polys {
		for r := r0; r < r1; r++ {
			from := 0
			if r > 0 {
				from = g.ends[r-1]
			}
			to := g.ends[r] - 1 // drop the closing position
			start := len(s.pts)
			// Written by index into the room grown above (at most
			// g.npos positions in all), each unless it repeats the last.
			pts, ob := s.pts[:cap(s.pts)], origs[:cap(origs)]
			w := start
			if from < to {
				pts[w], ob[w] = pt{a[from*st], a[from*st+1]}, 0
				w++
			}
			for i := from + 1; i < to; i++ {
				v := pt{a[i*st], a[i*st+1]}
				if pts[w-1] == v {
					continue
				}
				pts[w], ob[w] = v, int32(i-from)
				w++
			}
			s.pts, origs = pts[:w], ob[:w]
			ring, orig := s.pts[start:len(s.pts):len(s.pts)], origs[start:len(origs):len(origs)]
			for len(ring) > 1 && ring[len(ring)-1] == ring[0] {
				ring, orig = ring[:len(ring)-1], orig[:len(orig)-1]
			}
			s.pts, origs = s.pts[:start+len(ring)], origs[:start+len(ring)]
			if len(ring) < 3 {
				if p.listing() {
					p.report(RuleRingSelfIntersection, "the ring is degenerate: it has fewer than 3 distinct positions",
						at(ringRef{poly: k, ring: r - r0, orig: orig}, -1)...)
				}
				degenerate = true
			}
			s.rings = append(s.rings, ring)
			s.poly = append(s.poly, k)
			s.shell = append(s.shell, int32(len(s.rings)-1-(r-r0)))
			s.ringOff = append(s.ringOff, int32(start))
		}
		r0 = r1
	}
	s.origs = origs
	if degenerate {
		return
	}
	if f := s.run(); f != nil {
		if p.listing() {
			p.report(f.rule, f.msg, at(ref(f.ring), f.k)...)
		}
		return
	}
	// No crossings or overlaps and a tree of touches: what remains is
	// where the rings lie relative to one another, which the sweep found
	// (s.parent, a forest). Each ring's shell is known from the loop above
	// and ancestry in the forest is read from one depth-first numbering,
	// so this pass is O(1) per ring.
	s.number()
	p.relSteps += len(s.rings)
	for r := range s.rings {
		p.relSteps++
		par := int(s.parent[r])
		shell := int(s.shell[r])
		if shell == r {
			if par >= 0 && int(s.shell[par]) == par {
				if p.listing() {
					p.report(RuleMultiPolygonOverlap, "the polygon lies inside polygon "+strconv.Itoa(s.poly[par])+", so they overlap", s.poly[r])
				}
				return
			}
			continue
		}
		if par == shell {
			continue
		}
		if par >= 0 && s.poly[par] == s.poly[r] {
			if p.listing() {
				p.report(RuleNestedHoles, "the hole lies inside hole "+strconv.Itoa(ref(par).ring), at(ref(r), -1)...)
			}
			return
		}
		// Inside a ring of another polygon that lies inside this shell:
		// that polygon overlaps this one, which its own check reports.
		if par < 0 || !s.encloses(int32(shell), int32(par)) {
			if p.listing() {
				p.report(RuleHoleOutsideShell, "the hole is not inside the polygon's exterior ring", at(ref(r), -1)...)
			}
			return
		}
	}
	if p.o.StrictRightHandRule {
		for i := range s.rings {
			ccw := s.ccw[i]
			hole := i > 0 && s.poly[i] == s.poly[i-1]
			if hole && ccw {
				if p.listing() {
					p.report(RuleRightHandRule, "a hole must be clockwise (RFC 7946 section 3.1.6)", at(ref(i), -1)...)
				}
			} else if !hole && !ccw {
				if p.listing() {
					p.report(RuleRightHandRule, "an exterior ring must be counterclockwise (RFC 7946 section 3.1.6)", at(ref(i), -1)...)
				}
			}
		}
	}
}
