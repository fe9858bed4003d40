package geojson

import (
	"bytes"
	"math"
	"slices"
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
	g := p.newGnode()
	g.typ, g.start = typ, len(p.arena)
	if p.emptyArray() {
		// RFC 7946 section 3.1 allows it; an empty geometry, decoded as one.
		p.i++
		p.ws()
		p.i++
		g.stride = 2
		if p.o.RejectEmptyCoordinates {
			if p.listing() {
				p.report(RuleEmptyCoordinates, "a "+typ.String()+" with empty coordinates (Options.RejectEmptyCoordinates)")
			}
			g.bad = true
		}
		p.leaves = append(p.leaves, g)
		return g
	}
	before := p.nerr
	firstPos := p.npos
	p.dims, p.mixed = 0, false
	p.ms, p.zs = p.ms[:0], p.zs[:0]
	p.ends, p.pends, p.closed = p.ends[:0], p.pends[:0], p.closed[:0]
	p.gBefore = before
	p.level(typ.level(), firstPos)
	g.npos = p.npos - firstPos
	p.structure(g)
	g.stride = 2
	g.bad = p.nerr != before
	if g.bad {
		// Nothing reads a bad geometry's positions: its arena space is
		// given back, and its ends are not kept.
		p.arena = p.arena[:g.start]
		p.leaves = append(p.leaves, g)
		return g
	}
	if len(p.ends) > 0 {
		g.ends = append([]int(nil), p.ends...)
	}
	if len(p.pends) > 0 {
		g.polyEnds = append([]int(nil), p.pends...)
	}
	if p.dims == 3 && !p.mixed {
		if len(p.ms) == g.npos && g.npos > 0 {
			p.widen(g, 4)
		} else {
			p.widen(g, 3)
		}
	}
	if typ == tPolygon || typ == tMultiPolygon {
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
// Every element at level 0 counts as one position, so that position
// indices match the input even when an element is malformed. A level-1
// array (a LineString or a ring) leaves in p.lastClosed whether its first
// and last positions are the same (closedXY, closedZ), which structure
// reads for rings.
func (p *parser) level(level, firstPos int) {
	if level == 0 {
		if _, ok := p.positionFast(); !ok {
			p.position()
		}
		return
	}
	if level == 1 {
		p.lastClosed = 0
	}
	c := p.peek()
	if c != '[' {
		if c == '-' || (c >= '0' && c <= '9') {
			p.report(RuleCoordinatesNesting, "a number where an array was expected: the coordinates must be nested more deeply")
		} else if p.listing() {
			p.report(RuleWrongType, "an array was expected, not "+kindOf(c))
		}
		p.value(false)
		return
	}
	p.enter()
	p.i++
	if p.peek() == ']' {
		p.i++
	} else if level == 1 {
		p.line()
	} else {
		for n := 0; ; n++ {
			p.pushIdx(n)
			p.level(level-1, firstPos)
			p.pop()
			switch level {
			case 2:
				p.ends = appendScratch(p.ends, p.npos-firstPos)
				p.closed = appendScratch(p.closed, p.lastClosed)
			case 3:
				p.pends = appendScratch(p.pends, len(p.ends))
			}
			if !p.next(']') {
				break
			}
		}
	}
	p.leave()
}

// Bits of parser.closed: a line's first and last positions have the same
// longitude and latitude, and the same altitude (0 when absent).
const (
	closedXY uint8 = 1 << iota
	closedZ
)

// position parses one position. While the current geometry has no
// problem it stores x and y in the arena and, while every position so far
// has an altitude, z in p.zs (widen reads p.zs only for a geometry whose
// every position has one); once it has a problem, nothing is stored,
// since a bad geometry's positions are never read. It returns x, y and z
// as parsed (partly 0 for a malformed position), for ring closure.
func (p *parser) position() [3]float64 {
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
		} else if p.listing() {
			p.report(RuleWrongType, "a position must be an array of numbers, not "+kindOf(c))
		}
		p.value(false)
		return [3]float64{}
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
				f, _, fast := p.numFast() // never ±Inf
				if !fast {
					var raw []byte
					if f, raw = p.numSlow(); math.IsInf(f, 0) {
						if p.listing() {
							p.report(RulePositionNotFinite, "number "+string(raw)+" is not a finite float64", n)
						}
						ok = false
					}
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
				if p.listing() {
					p.report(RulePositionElement, "a position element must be a number, not "+kindOf(c), n)
				}
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
		if p.listing() {
			p.report(RulePositionLength, "a position needs at least 2 elements, it has "+strconv.Itoa(n))
		}
		ok = false
	case n > 3 && !p.o.AllowExtraDimensions:
		if p.listing() {
			p.report(RulePositionLength, "a position may have at most 3 elements (longitude, latitude, altitude), it has "+strconv.Itoa(n))
		}
		ok = false
	}
	if ok {
		if (v[0] < -180 || v[0] > 180) && p.listing() {
			p.report(RuleLongitudeRange, "longitude "+strconv.FormatFloat(v[0], 'g', -1, 64)+" is outside [-180, 180]")
		}
		if (v[1] < -90 || v[1] > 90) && p.listing() {
			p.report(RuleLatitudeRange, "latitude "+strconv.FormatFloat(v[1], 'g', -1, 64)+" is outside [-90, 90]")
		}
		d := min(n, 3)
		switch {
		case p.dims == 0:
			p.dims = d
		case d != p.dims && !p.mixed:
			p.mixed = true
			if p.o.MixedDimensions == MixedDimensionsReject && p.listing() {
				p.report(RuleMixedDimensions, "position has "+strconv.Itoa(d)+" dimensions but the geometry's first position has "+strconv.Itoa(p.dims))
			}
		}
	}
	if p.nerr == p.gBefore {
		// Every position stored is ok (a position that is not reports a
		// problem), so p.dims is that of the first.
		if ok && n >= 4 && p.o.AllowExtraDimensions {
			p.ms = appendScratch(p.ms, v[3]) // kept when every position of the geometry has one
		}
		if len(p.arena)+2 > cap(p.arena) {
			p.growArena()
		}
		p.arena = append(p.arena, v[0], v[1])
		if p.dims == 3 && !p.mixed {
			p.zs = appendScratch(p.zs, v[2])
		}
	}
	return [3]float64{v[0], v[1], v[2]}
}

// positionFast parses the usual position, two or three numbers that
// numFast reads, in range, without whitespace, of the dimension of the
// geometry's positions so far, and stores it as position does; it returns
// false, consuming nothing, for anything else, which position then
// parses. It skips what position does only to report problems.
func (p *parser) positionFast() (v [3]float64, ok bool) {
	d, j := p.data, p.i
	if j >= len(d) || d[j] != '[' || p.depth >= p.o.MaxDepth || p.npos >= p.o.MaxPositions {
		return v, false
	}
	// x, then y, then z or the end: written out, not looped.
	x, e, fast := scanNum(d, j+1)
	if !fast || e >= len(d) || d[e] != ',' {
		return v, false
	}
	y, e, fast := scanNum(d, e+1)
	if !fast || e >= len(d) {
		return v, false
	}
	n := 2
	switch d[e] {
	case ']':
	case ',':
		if v[2], e, fast = scanNum(d, e+1); !fast || e >= len(d) || d[e] != ']' {
			return [3]float64{}, false
		}
		n = 3
	default:
		return v, false
	}
	if x < -180 || x > 180 || y < -90 || y > 90 || (p.dims != n && p.dims != 0) {
		return [3]float64{}, false
	}
	p.i = e + 1
	p.npos++
	p.dims = n
	if p.nerr == p.gBefore {
		if len(p.arena)+2 > cap(p.arena) {
			p.growArena()
		}
		p.arena = append(p.arena, x, y)
		if n == 3 && !p.mixed {
			p.zs = appendScratch(p.zs, v[2])
		}
	}
	v[0], v[1] = x, y
	return v, true
}

// appendScratch appends v to s, a scratch slice the pooled parser keeps,
// doubling its capacity when it is full: append grows a large slice by
// about a quarter, so that a cold parse would allocate some five times the
// slice's final size, rather than two.
func appendScratch[E any](s []E, v E) []E {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 8))
	}
	return append(s, v)
}

// growArena makes room in the arena for the positions still to come:
// twice the room, or, when less, two floats for each '[' left in the
// input (an upper bound on the positions left), so that the arena never
// grows by small steps nor far past what the input can fill.
func (p *parser) growArena() {
	need := len(p.arena) + 2
	c := max(2*cap(p.arena), need)
	if bound := need + 2*bytes.Count(p.data[p.i:], []byte{'['}); c > bound {
		c = bound
	}
	a := make([]float64, len(p.arena), c)
	copy(a, p.arena)
	p.arena = a
}

// structure checks position counts and ring closure, from p.ends,
// p.pends and p.closed.
func (p *parser) structure(g *gnode) {
	ring := func(r, from, to int, extra ...any) {
		switch {
		case to-from < 4:
			if p.listing() {
				p.report(RuleRingTooShort, "a linear ring needs at least 4 positions, it has "+strconv.Itoa(to-from), extra...)
			}
		case p.closed[r]&closedXY == 0 || (p.dims == 3 && !p.mixed && p.closed[r]&closedZ == 0):
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
		if len(p.ends) == 0 {
			p.report(RuleEmptyCoordinates, "a MultiLineString needs at least one LineString")
		}
		from := 0
		for i, to := range p.ends {
			if to-from < 2 && p.listing() {
				p.report(RuleLineStringTooShort, "a LineString needs at least 2 positions, it has "+strconv.Itoa(to-from), i)
			}
			from = to
		}
	case tPolygon:
		if len(p.ends) == 0 {
			p.report(RuleEmptyCoordinates, "a Polygon needs at least one linear ring")
		}
		from := 0
		for i, to := range p.ends {
			ring(i, from, to, i)
			from = to
		}
	case tMultiPolygon:
		if len(p.pends) == 0 {
			p.report(RuleEmptyCoordinates, "a MultiPolygon needs at least one Polygon")
		}
		r0 := 0
		for k, r1 := range p.pends {
			if r1 == r0 {
				p.report(RuleEmptyCoordinates, "a Polygon needs at least one linear ring", k)
			}
			for r := r0; r < r1; r++ {
				from := 0
				if r > 0 {
					from = p.ends[r-1]
				}
				ring(r, from, p.ends[r], k, r-r0)
			}
			r0 = r1
		}
	}
}

// widen rewrites g's positions, the last in the arena, from stride 2 to
// stride 3 with the altitudes of p.zs, or to stride 4 with the M values
// of p.ms too (every position of g had a fourth element, and
// Options.AllowExtraDimensions keeps it).
func (p *parser) widen(g *gnode, stride int) {
	p.arena = slices.Grow(p.arena, (stride-2)*g.npos)[:len(p.arena)+(stride-2)*g.npos]
	a := p.arena[g.start:]
	for k := g.npos - 1; k >= 0; k-- { // from the end: no position is overwritten before it is read
		x, y := a[2*k], a[2*k+1]
		a[stride*k], a[stride*k+1], a[stride*k+2] = x, y, p.zs[k]
		if stride == 4 {
			a[4*k+3] = p.ms[k]
		}
	}
	g.stride = stride
}

// newGnode returns a zeroed gnode, taken from blocks of them that double
// in size: a FeatureCollection of Points costs one allocation per block,
// not per geometry, and a pooled parser starts with one block as large as
// its last call needed (release).
func (p *parser) newGnode() *gnode {
	if p.gnext == len(p.gblock) {
		p.gblock, p.gnext = make([]gnode, max(4, 2*len(p.gblock))), 0
	}
	g := &p.gblock[p.gnext]
	p.gnext++
	p.gcount++
	*g = gnode{}
	return g
}
