package geojson

// This file makes the sweep's segments and vertex events in one pass over
// the rings, laying the events out by the shape of the ring at each
// vertex, for mergeRuns (sortevents.go): a ring splits at its turning
// vertices into monotone chains, and its vertices other than the chains'
// ends, taken in ring order, and its chains' ends alone, mostly form long
// monotone runs even when the ring's own order does not. A zigzag's
// vertices, in ring order, rise and fall at every step, runs of two; its
// inner vertices alone, and its outer ones alone, trace smooth curves of
// a few runs each. A smooth ring's events stay in ring order but for a
// few: its runs are its chains, as they were.

// Bits of event.kind: the shape of the ring at the vertex, which the
// sweep reads instead of the vertex's segments.
const (
	evUp     uint8 = 1 << iota // the segment from the vertex rises in sweep order: it starts there
	evPrevUp                   // the segment into the vertex rises: it ends there
	evFirst                    // vertex 0 of its ring: the segment into it is the ring's last
)

// build makes, for the n vertices of s.rings, the segments (segment k of
// ring r joins vertices k and k+1, and has id s.segOff[r]+k, like vertex
// k), their empty slots (resetStatus) and the events into evs, and
// returns the rings' bounding box. The events are the vertices where
// both segments end (the chains' ends) last, in reverse ring order from
// the end of evs, and the others first, in ring order: written where
// they go, with no buffer.
func (s *sweeper) build(n int, evs []event) (xlo, xhi, ylo, yhi float64) {
	segs := grow(s.segs, n)
	at := grow(s.at, n)
	s.segOff = s.segOff[:0]
	front, back := 0, n
	for _, ring := range s.rings {
		if len(ring) > 0 {
			xlo, ylo = ring[0].x, ring[0].y
			xhi, yhi = xlo, ylo
			break
		}
	}
	i := 0
	for r, ring := range s.rings {
		s.segOff = append(s.segOff, i)
		m := len(ring)
		if m == 0 {
			continue
		}
		// The ring's segments and slots, as slices of its length, spare
		// the bounds checks.
		rsegs, rat := segs[i:i+m], at[i:i+m]
		prevUp := less(ring[m-1], ring[0])
		first := evFirst
		for k, a := range ring {
			j := k + 1
			if j == m {
				j = 0
			}
			b := ring[j]
			if a.x < xlo {
				xlo = a.x
			} else if a.x > xhi {
				xhi = a.x
			}
			if a.y < ylo {
				ylo = a.y
			} else if a.y > yhi {
				yhi = a.y
			}
			up := less(a, b)
			kind := first
			first = 0
			if up {
				rsegs[k] = seg{a: a, b: b, ring: int32(r), k: int32(k)}
				kind |= evUp
			} else {
				rsegs[k] = seg{a: b, b: a, ring: int32(r), k: int32(k)}
			}
			rat[k] = slot{nilNode, 0}
			if prevUp {
				kind |= evPrevUp
			}
			if e := mkEvent(a, int32(i+k), kind); prevUp && !up {
				back--
				evs[back] = e
			} else {
				evs[front] = e
				front++
			}
			prevUp = up
		}
		i += m
	}
	s.segOff = append(s.segOff, i)
	s.segs, s.at = segs, at
	return xlo, xhi, ylo, yhi
}
