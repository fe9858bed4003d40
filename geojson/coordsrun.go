package geojson

// This file holds a line's usual positions, read in one loop.

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
	budget := p.o.MaxPositions - p.npos
	d, j := p.data, p.i
	for k < budget {
		if j >= len(d) || d[j] != '[' {
			break
		}
		x, e, fast := scanNum(d, j+1)
		if !fast || e >= len(d) || d[e] != ',' {
			break
		}
		y, e, fast := scanNum(d, e+1)
		if !fast || e >= len(d) || d[e] != ']' {
			break
		}
		if x < -180 || x > 180 || y < -90 || y > 90 {
			break
		}
		j = e + 1
		if len(p.arena)+2 > cap(p.arena) {
			p.i = j
			p.growArena()
		}
		p.arena = append(p.arena, x, y)
		if k == 0 {
			first = [2]float64{x, y}
		}
		last = [2]float64{x, y}
		k++
		if j >= len(d) || d[j] != ',' {
			more = false
			break
		}
		j++
		more = true
	}
	if k > 0 {
		p.i = j
		p.npos += k
		p.dims = 2
	}
	return k, more, first, last
}
