package geojson

import (
	"math"
	"strconv"
)

// coordinates parses a "coordinates" value for a geometry of type typ
// and runs every check on it: positions, structure, and (for polygons)
// validity. It returns nil when the value is not an array at all.
func (p *parser) coordinates(typ gtype) *gnode {
	if p.peek() != '[' {
		p.value(false)
		return nil
	}
	g := &gnode{typ: typ, start: len(p.arena)}
	if p.emptyArray() {
		// RFC 7946 section 3.1 allows it; an empty geometry, decoded as one.
		p.i++
		p.ws()
		p.i++
		g.stride = 2
		if p.o.RejectEmptyCoordinates {
			p.report(RuleEmptyCoordinates, "a "+typ.String()+" with empty coordinates (Options.RejectEmptyCoordinates)")
			g.bad = true
		}
		p.leaves = append(p.leaves, g)
		return g
	}
	before := p.nerr
	firstPos := p.npos
	p.dims, p.mixed = 0, false
	p.ms = p.ms[:0]
	p.ends, p.pends = p.ends[:0], p.pends[:0]
	p.level(typ.level(), firstPos)
	g.npos = p.npos - firstPos
	if len(p.ends) > 0 {
		g.ends = append([]int(nil), p.ends...)
	}
	if len(p.pends) > 0 {
		g.polyEnds = append([]int(nil), p.pends...)
	}
	p.structure(g)
	g.stride = 3
	if p.dims != 3 || p.mixed {
		p.compact(g)
	} else if len(p.ms) == g.npos && g.npos > 0 {
		p.widen(g)
	}
	g.bad = p.nerr != before
	if !g.bad && (typ == tPolygon || typ == tMultiPolygon) {
		p.checkPolygons(g)
		g.bad = p.nerr != before
	}
	p.leaves = append(p.leaves, g)
	return g
}

// emptyArray reports whether the value at p.i (a '[') is an empty array.
func (p *parser) emptyArray() bool {
	j := p.i + 1
	for j < len(p.data) && (p.data[j] == ' ' || p.data[j] == '\t' || p.data[j] == '\n' || p.data[j] == '\r') {
		j++
	}
	return j < len(p.data) && p.data[j] == ']'
}

// level parses one array level of coordinates; level 0 is a position.
// Every element at level 0 stores exactly one position, so that position
// indices match the input even when an element is malformed.
func (p *parser) level(level, firstPos int) {
	if level == 0 {
		p.position()
		return
	}
	c := p.peek()
	if c != '[' {
		if c == '-' || (c >= '0' && c <= '9') {
			p.report(RuleCoordinatesNesting, "a number where an array was expected: the coordinates must be nested more deeply")
		} else {
			p.report(RuleWrongType, "an array was expected, not "+kindOf(c))
		}
		p.value(false)
		return
	}
	p.enter()
	p.i++
	if p.peek() == ']' {
		p.i++
	} else {
		for n := 0; ; n++ {
			p.pushIdx(n)
			p.level(level-1, firstPos)
			p.pop()
			switch level {
			case 2:
				p.ends = append(p.ends, p.npos-firstPos)
			case 3:
				p.pends = append(p.pends, len(p.ends))
			}
			if !p.next(']') {
				break
			}
		}
	}
	p.leave()
}

// position parses one position and appends x, y, z (z = 0 for 2D) to
// the arena.
func (p *parser) position() {
	var v [4]float64
	n := 0
	ok := true
	p.npos++
	if p.npos > p.o.MaxPositions {
		p.limit(RuleLimitPositions, "more than "+strconv.Itoa(p.o.MaxPositions)+" positions")
	}
	c := p.peek()
	if c != '[' {
		if c == '-' || (c >= '0' && c <= '9') {
			p.report(RuleCoordinatesNesting, "a number where a position array was expected: the coordinates must be nested more deeply")
		} else {
			p.report(RuleWrongType, "a position must be an array of numbers, not "+kindOf(c))
		}
		p.value(false)
		p.arena = append(p.arena, 0, 0, 0)
		return
	}
	p.enter()
	p.i++
	if p.peek() == ']' {
		p.i++
	} else {
		for {
			c := p.peek()
			switch {
			case c == '-' || (c >= '0' && c <= '9'):
				f, raw := p.num()
				if math.IsInf(f, 0) {
					p.report(RulePositionNotFinite, "number "+string(raw)+" is not a finite float64", n)
					ok = false
				}
				if n < 4 {
					v[n] = f
				}
			case c == '[':
				p.report(RuleCoordinatesNesting, "an array where a number was expected: the coordinates are nested too deeply", n)
				p.pushIdx(n)
				p.value(false)
				p.pop()
				ok = false
			case c == 'n':
				p.literal("null")
				p.report(RulePositionElement, "null is not a number (go-geom would silently read it as 0)", n)
				ok = false
			default:
				p.report(RulePositionElement, "a position element must be a number, not "+kindOf(c), n)
				p.pushIdx(n)
				p.value(false)
				p.pop()
				ok = false
			}
			n++
			if !p.next(']') {
				break
			}
		}
	}
	p.leave()
	switch {
	case n < 2:
		p.report(RulePositionLength, "a position needs at least 2 elements, it has "+strconv.Itoa(n))
		ok = false
	case n > 3 && !p.o.AllowExtraDimensions:
		p.report(RulePositionLength, "a position may have at most 3 elements (longitude, latitude, altitude), it has "+strconv.Itoa(n))
		ok = false
	}
	if ok {
		if v[0] < -180 || v[0] > 180 {
			p.report(RuleLongitudeRange, "longitude "+strconv.FormatFloat(v[0], 'g', -1, 64)+" is outside [-180, 180]")
		}
		if v[1] < -90 || v[1] > 90 {
			p.report(RuleLatitudeRange, "latitude "+strconv.FormatFloat(v[1], 'g', -1, 64)+" is outside [-90, 90]")
		}
		d := min(n, 3)
		switch {
		case p.dims == 0:
			p.dims = d
		case d != p.dims && !p.mixed:
			p.mixed = true
			if p.o.MixedDimensions == MixedDimensionsReject {
				p.report(RuleMixedDimensions, "position has "+strconv.Itoa(d)+" dimensions but the geometry's first position has "+strconv.Itoa(p.dims))
			}
		}
	}
	if ok && n >= 4 && p.o.AllowExtraDimensions {
		p.ms = append(p.ms, v[3]) // kept when every position of the geometry has one
	}
	p.arena = append(p.arena, v[0], v[1], v[2])
}

// structure checks position counts and ring closure, reading positions
// with stride 3.
func (p *parser) structure(g *gnode) {
	a := p.arena[g.start:]
	same := func(i, j int) bool {
		x, y := a[3*i:3*i+3], a[3*j:3*j+3]
		if x[0] != y[0] || x[1] != y[1] {
			return false
		}
		return p.dims != 3 || p.mixed || x[2] == y[2]
	}
	ring := func(from, to int, extra ...any) {
		switch {
		case to-from < 4:
			p.report(RuleRingTooShort, "a linear ring needs at least 4 positions, it has "+strconv.Itoa(to-from), extra...)
		case !same(from, to-1):
			p.report(RuleRingNotClosed, "the first and last positions of a linear ring must be identical", extra...)
		}
	}
	switch g.typ {
	case tMultiPoint:
		if g.npos == 0 {
			p.report(RuleEmptyCoordinates, "a MultiPoint needs at least one position")
		}
	case tLineString:
		switch {
		case g.npos == 0:
			p.report(RuleEmptyCoordinates, "a LineString needs at least 2 positions, it has none")
		case g.npos < 2:
			p.report(RuleLineStringTooShort, "a LineString needs at least 2 positions, it has 1")
		}
	case tMultiLineString:
		if len(g.ends) == 0 {
			p.report(RuleEmptyCoordinates, "a MultiLineString needs at least one LineString")
		}
		from := 0
		for i, to := range g.ends {
			if to-from < 2 {
				p.report(RuleLineStringTooShort, "a LineString needs at least 2 positions, it has "+strconv.Itoa(to-from), i)
			}
			from = to
		}
	case tPolygon:
		if len(g.ends) == 0 {
			p.report(RuleEmptyCoordinates, "a Polygon needs at least one linear ring")
		}
		from := 0
		for i, to := range g.ends {
			ring(from, to, i)
			from = to
		}
	case tMultiPolygon:
		if len(g.polyEnds) == 0 {
			p.report(RuleEmptyCoordinates, "a MultiPolygon needs at least one Polygon")
		}
		r0 := 0
		for k, r1 := range g.polyEnds {
			if r1 == r0 {
				p.report(RuleEmptyCoordinates, "a Polygon needs at least one linear ring", k)
			}
			for r := r0; r < r1; r++ {
				from := 0
				if r > 0 {
					from = g.ends[r-1]
				}
				ring(from, g.ends[r], k, r-r0)
			}
			r0 = r1
		}
	}
}

// widen rewrites g's positions from stride 3 to stride 4, with the M
// values of p.ms: every position of g had a fourth element, and
// Options.AllowExtraDimensions keeps it. g is the last geometry in the
// arena.
func (p *parser) widen(g *gnode) {
	p.arena = append(p.arena, make([]float64, g.npos)...)
	a := p.arena[g.start:]
	for k := g.npos - 1; k >= 0; k-- { // from the end: no position is overwritten before it is read
		x, y, z := a[3*k], a[3*k+1], a[3*k+2]
		a[4*k], a[4*k+1], a[4*k+2], a[4*k+3] = x, y, z, p.ms[k]
	}
	g.stride = 4
}

// compact rewrites g's positions from stride 3 to stride 2 in place. g
// is the last geometry in the arena.
func (p *parser) compact(g *gnode) {
	a := p.arena[g.start:]
	for k := range g.npos {
		a[2*k], a[2*k+1] = a[3*k], a[3*k+1]
	}
	g.stride = 2
	p.arena = p.arena[:g.start+2*g.npos]
}
