package geojson

// This file holds a line's positions, the usual ones read in one loop.

// line parses the positions of a non-empty level-1 array (a LineString
// or a ring), p.i at its first element: the runs of usual positions with
// run2, any other position with positionFast or position. It leaves in
// p.lastClosed whether the first and last positions are the same.
func (p *parser) line() {
	var first, last [3]float64
	for n := 0; ; {
		if k, more, f, l := p.run2(); k > 0 {
			if n == 0 {
				first = [3]float64{f[0], f[1]}
			}
			last = [3]float64{l[0], l[1]}
			n += k
			if !more {
				if !p.next(']') {
					break
				}
				continue
			}
		}
		v, ok := p.positionFast()
		if !ok {
			p.pushIdx(n)
			v = p.position()
			p.pop()
		}
		if n == 0 {
			first = v
		}
		last = v
		n++
		if p.i < len(p.data) && p.data[p.i] == ',' {
			p.i++ // next's usual case, inline
			continue
		}
		if !p.next(']') {
			break
		}
	}
	if first[0] == last[0] && first[1] == last[1] {
		p.lastClosed = closedXY
		if first[2] == last[2] {
			p.lastClosed |= closedZ
		}
	}
}

// run2 parses, from p.i, as many positions in a row as are the usual
// two-dimensional position that positionFast takes (two numbers that
// scanNum reads, in range, without whitespace), each followed by ',' or
// not, and stores them as positionFast does. It stops after a position
// not followed by ',', or before one that is not usual, consuming nothing
// of it; more reports that the last position parsed was followed by a
// ',', consumed, so that an element follows. first and last are the x and
// y of the first and last positions parsed. It parses nothing when the
// geometry's positions so far have three dimensions, when it has a
// problem, or at the depth or position limit: positionFast and position
// then take each position, as before.
func (p *parser) run2() (k int, more bool, first, last [2]float64) {
	if p.dims == 3 || p.nerr != p.gBefore || p.depth >= p.o.MaxDepth {
		return 0, false, first, last
	}
	start := len(p.arena)
	// The arena's length at the limit, which may be none (no overflow:
	// there are fewer positions left than bytes).
	end := start + 2*min(p.o.MaxPositions-p.npos, len(p.data))
	d, j := p.data, p.i
	for len(p.arena) < end {
		if j >= len(d) || d[j] != '[' {
			break
		}
		x, e, fast := scanNum(d, j+1)
		if !fast || e >= len(d) || d[e] != ',' {
			break
		}
		y, e, fast := scanNum(d, e+1)
		if !fast || e+1 >= len(d) || d[e] != ']' {
			break
		}
		if x < -180 || x > 180 || y < -90 || y > 90 {
			break
		}
		if len(p.arena)+2 > cap(p.arena) {
			p.i = e + 1
			p.growArena()
		}
		p.arena = append(p.arena, x, y)
		j = e + 1
		if d[j] != ',' {
			break
		}
		j++
	}
	if len(p.arena) == start {
		return 0, false, first, last
	}
	a := p.arena[start:]
	k = len(a) / 2
	p.i = j
	p.npos += k
	p.dims = 2
	return k, d[j-1] == ',', [2]float64{a[0], a[1]}, [2]float64{a[len(a)-2], a[len(a)-1]}
}
