package geojson

import (
	"math"
	"strconv"
)

// This file holds the "bbox" member: its own checks and that it contains
// the positions of its object.

// bbox parses a "bbox" value and checks it on its own: length, element
// types, order and range. It reports whether the bbox is usable for the
// containment check.
func (p *parser) bbox(kind byte) ([]float64, bool) {
	if kind != '[' {
		if p.listing() {
			p.report(RuleWrongType, `"bbox" must be an array of numbers, not `+kindOf(kind))
		}
		p.value(false)
		return nil, false
	}
	p.enter()
	p.i++
	var b []float64
	ok := true
	if p.peek() == ']' {
		p.i++
	} else {
		for n := 0; ; n++ {
			if k := p.peek(); k == '-' || (k >= '0' && k <= '9') {
				f, _ := p.num()
				if math.IsInf(f, 0) {
					p.report(RuleBBoxElement, "bbox element is not a finite number", n)
					ok = false
				}
				b = append(b, f)
			} else {
				if p.listing() {
					p.report(RuleBBoxElement, "bbox element must be a number, not "+kindOf(k), n)
				}
				p.pushIdx(n)
				p.value(false)
				p.pop()
				ok = false
				b = append(b, 0)
			}
			if !p.next(']') {
				break
			}
		}
	}
	p.leave()
	if !ok {
		return b, false
	}
	if len(b) != 4 && len(b) != 6 {
		if p.listing() {
			p.report(RuleBBoxLength, "bbox must have 4 elements (2D) or 6 (3D), not "+strconv.Itoa(len(b)))
		}
		return b, false
	}
	n := len(b) / 2
	for axis := range n {
		lo, hi := b[axis], b[axis+n]
		if axis == 0 {
			if lo < -180 || lo > 180 || hi < -180 || hi > 180 {
				p.report(RuleBBoxRange, "bbox longitudes must lie in [-180, 180]")
				ok = false
			}
			// west > east is a bbox crossing the antimeridian (RFC 7946 section 5.2).
			continue
		}
		if axis == 1 && (lo < -90 || lo > 90 || hi < -90 || hi > 90) {
			p.report(RuleBBoxRange, "bbox latitudes must lie in [-90, 90]")
			ok = false
		}
		if lo > hi {
			if p.listing() {
				p.report(RuleBBoxOrder, "bbox minimum "+strconv.FormatFloat(lo, 'g', -1, 64)+
					" exceeds its maximum "+strconv.FormatFloat(hi, 'g', -1, 64)+" on axis "+strconv.Itoa(axis))
			}
			ok = false
		}
	}
	return b, ok
}

// checkBBoxContains reports the first position of leaves outside b.
func (p *parser) checkBBoxContains(b []float64, leaves []*gnode) {
	n := len(b) / 2
	w, s, e, nn := b[0], b[1], b[n], b[n+1]
	for _, g := range leaves {
		if g.bad {
			continue
		}
		for k := range g.npos {
			o := g.start + k*g.stride
			x, y := p.arena[o], p.arena[o+1]
			in := y >= s && y <= nn
			if w <= e {
				in = in && x >= w && x <= e
			} else {
				in = in && (x >= w || x <= e)
			}
			if in && n == 3 && g.stride >= 3 {
				z := p.arena[o+2]
				in = z >= b[2] && z <= b[5]
			}
			if !in {
				if p.listing() {
					p.report(RuleBBoxExcludesGeometry, "position "+fmtPos(p.arena[o:o+g.stride])+" lies outside the bbox", "bbox")
				}
				return
			}
		}
	}
}

func fmtPos(v []float64) string {
	b := []byte{'['}
	for i, f := range v {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return string(append(b, ']'))
}
