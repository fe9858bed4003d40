package geojson

// This file lays the sweep's vertex events out by the shape of the ring
// at each vertex, for mergeRuns (sortevents.go): a ring splits at its
// turning vertices into monotone chains, and the vertices of each kind,
// taken in ring order, mostly form long monotone runs even when the
// ring's own order does not. A zigzag's vertices, in ring order, rise
// and fall at every step, runs of two; its inner vertices alone, and its
// outer ones alone, trace smooth curves of a few runs each.

// eventsByShape fills evs, of one event per vertex of s.rings (vertex k
// of ring r has id s.segOff[r]+k), with the vertices where both
// segments start first (the chains' starts), then those where the ring
// passes on (the chains' insides), then those where both end (the
// chains' ends, last to first), each kind in ring order.
// Fewer than minSortRuns events are in ring order: sortEventsIn sorts
// them without runs, and without the buffer for the passing vertices.
func (s *sweeper) eventsByShape(evs []event) {
	if len(evs) < minSortRuns {
		i := 0
		for r, ring := range s.rings {
			for k, v := range ring {
				evs[i] = event{v, int32(s.segOff[r] + k)}
				i++
			}
		}
		return
	}
	front, back := 0, len(evs)
	pass := growEv(s.evs2, len(evs))
	np := 0
	put := func(e event, prevUp, up bool) {
		switch {
		case up && !prevUp:
			evs[front] = e
			front++
		case !up && prevUp:
			back--
			evs[back] = e
		default:
			pass[np] = e
			np++
		}
	}
	for r, ring := range s.rings {
		n := len(ring)
		if n == 0 {
			continue
		}
		id := int32(s.segOff[r])
		// up: the segment from the vertex to the next rises in sweep
		// order; prevUp: the one into the vertex does.
		last := ring[n-1]
		prevUp := less(last, ring[0])
		for k, v := range ring[:n-1] {
			up := less(v, ring[k+1])
			put(event{v, id + int32(k)}, prevUp, up)
			prevUp = up
		}
		put(event{last, id + int32(n-1)}, prevUp, less(last, ring[0]))
	}
	copy(evs[front:back], pass[:np])
	s.evs2 = pass
}
