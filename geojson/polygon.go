package geojson

import (
	"slices"
	"sync"
)

// sweeperPool recycles sweep buffers across polygons and calls.
var sweeperPool = sync.Pool{New: func() any { return new(sweeper) }}

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
	s := sweeperPool.Get().(*sweeper)
	defer sweeperPool.Put(s)
	s.rings = s.rings[:0]
	s.poly = s.poly[:0]
	var refs []ringRef
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
	r0 := 0
	degenerate := false
	for k, r1 := range polys {
		for r := r0; r < r1; r++ {
			from := 0
			if r > 0 {
				from = g.ends[r-1]
			}
			to := g.ends[r] - 1 // drop the closing position
			var ring []pt
			if len(s.rings) < cap(s.rings) {
				ring = s.rings[:len(s.rings)+1][len(s.rings)][:0]
			}
			ring = slices.Grow(ring, to-from)
			orig := make([]int32, 0, to-from)
			for i := from; i < to; i++ {
				v := pt{a[i*st], a[i*st+1]}
				if len(ring) > 0 && ring[len(ring)-1] == v {
					continue
				}
				ring = append(ring, v)
				orig = append(orig, int32(i-from))
			}
			for len(ring) > 1 && ring[len(ring)-1] == ring[0] {
				ring, orig = ring[:len(ring)-1], orig[:len(orig)-1]
			}
			ref := ringRef{poly: k, ring: r - r0, orig: orig}
			if len(ring) < 3 {
				p.report(RuleRingSelfIntersection, "the ring is degenerate: it has fewer than 3 distinct positions", at(ref, -1)...)
				degenerate = true
			}
			s.rings = append(s.rings, ring)
			s.poly = append(s.poly, k)
			refs = append(refs, ref)
		}
		r0 = r1
	}
	if degenerate {
		return
	}
	if f := s.run(); f != nil {
		p.report(f.rule, f.msg, at(refs[f.ring], f.k)...)
		return
	}
	// No crossings or overlaps and a tree of touches: what remains is
	// where the rings lie relative to one another, which the sweep found.
	shellOf := func(r int) int { // sweeper index of the shell of r's polygon
		for r > 0 && s.poly[r-1] == s.poly[r] {
			r--
		}
		return r
	}
	isShell := func(r int) bool { return shellOf(r) == r }
	for r := range s.rings {
		par := int(s.parent[r])
		if isShell(r) {
			if par >= 0 && isShell(par) {
				p.report(RuleMultiPolygonOverlap, "the polygon lies inside polygon "+itoa(refs[par].poly)+", so they overlap", refs[r].poly)
				return
			}
			continue
		}
		shell := shellOf(r)
		if par == shell {
			continue
		}
		if par >= 0 && s.poly[par] == s.poly[r] {
			p.report(RuleNestedHoles, "the hole lies inside hole "+itoa(refs[par].ring), at(refs[r], -1)...)
			return
		}
		// Inside a ring of another polygon that lies inside this shell:
		// that polygon overlaps this one, which its own check reports.
		inShell := false
		for q := par; q >= 0; q = int(s.parent[q]) {
			if q == shell {
				inShell = true
				break
			}
		}
		if !inShell {
			p.report(RuleHoleOutsideShell, "the hole is not inside the polygon's exterior ring", at(refs[r], -1)...)
			return
		}
	}
	if p.o.StrictRightHandRule {
		for i := range s.rings {
			ccw := s.ccw[i]
			hole := i > 0 && s.poly[i] == s.poly[i-1]
			if hole && ccw {
				p.report(RuleRightHandRule, "a hole must be clockwise (RFC 7946 section 3.1.6)", at(refs[i], -1)...)
			} else if !hole && !ccw {
				p.report(RuleRightHandRule, "an exterior ring must be counterclockwise (RFC 7946 section 3.1.6)", at(refs[i], -1)...)
			}
		}
	}
}

// ringCCW reports whether a simple ring is counterclockwise, exactly: the
// turn at its lexicographically smallest vertex, which is convex.
func ringCCW(ring []pt) bool {
	m := 0
	for i, v := range ring {
		if less(v, ring[m]) {
			m = i
		}
	}
	n := len(ring)
	return orient(ring[(m+n-1)%n], ring[m], ring[(m+1)%n]) > 0
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}
