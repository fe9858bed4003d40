package geojson

import "slices"

// This file holds the plane sweep that checks the rings of a Polygon or
// MultiPolygon for forbidden contacts in O(n log n) time for n segments
// (plus the number of ring-to-ring touch points, which is bounded by the
// number of rings on valid input): a Shamos–Hoey sweep over the
// lexicographically sorted vertices, with a list of blocks of segments,
// ordered by an AVL tree, as the sweep status (sweepstatus.go).
//
// Only segments that become neighbours in the status are tested for
// crossings and overlaps, which finds one if any exists (the leftmost
// forbidden contact is between neighbours just before the sweep reaches
// it). Touches, which are allowed between different rings, always happen
// at a vertex; they are found exactly at that vertex's event: by grouping
// equal vertices, and by collecting the status segments that pass through
// the vertex, which are contiguous in the status.
//
// At a vertex where a segment ends, its place in the status is known, so
// the segments at the vertex and their neighbours are found by walking
// the status locally; segments that start there are linked in next to
// their neighbour. Only a vertex where segments start and none ends needs
// a descent from the root. Every status operation is O(log n + blockCap)
// in the worst case.

// seg is a ring segment with a before b in sweep order.
type seg struct {
	a, b pt
	ring int32 // index into the sweeper's rings
	k    int32 // the segment joins vertex k and k+1 (mod n) of its ring
}

// sweepFault is the first forbidden configuration the sweep finds.
type sweepFault struct {
	rule  string
	ring  int // ring (sweeper index) to point at
	k     int // vertex of that ring, -1 for the whole ring
	ring2 int // the other ring involved, or -1
	msg   string
}

// event is a ring vertex: its point, and in one word (copied as one by
// the sort) its global id and the shape of the ring there (evUp and the
// other bits, sweepshape.go).
type event struct {
	p  pt
	vk uint64 // id in the low 32 bits, shape above
}

// mkEvent returns the event of vertex v at p with the shape bits kind.
func mkEvent(p pt, v int32, kind uint8) event {
	return event{p, uint64(uint32(v)) | uint64(kind)<<32}
}

// id returns the vertex's global id.
func (e event) id() int32 { return int32(uint32(e.vk)) }

// kind returns the shape bits of the ring at the vertex.
func (e event) kind() uint8 { return uint8(e.vk >> 32) }

const unknownParent = -2

// sweeper holds reusable buffers for sweeps.
type sweeper struct {
	rings   [][]pt
	pts     []pt    // backing array of rings
	origs   []int32 // input position index of each of pts
	ringOff []int32 // offset of each ring in pts
	poly    []int   // polygon of each ring
	segOff  []int   // first segment of each ring
	segs    []seg
	evs     []event // vertex events, sorted
	at      []slot  // where each segment is in the status
	nodes   []tnode // status blocks
	bitems  []int32 // segments of the status blocks, blockCap per block
	bfree   []int32 // free blocks
	root    int32   // root of the block tree
	head    int32   // first block
	uf      []int32 // union-find over rings and touch points
	onBuf   []int32
	dirs    []dir
	labels  []int32
	mark    []int32 // per ring: the last event that met it
	evNum   int32
	grp     []int32
	vbuf    []int32
	ends    []int32
	starts  []int32
	count   []int32 // bucket sort buffers
	bk      []int32
	evs2    []event

	ccw    []bool  // orientation of each ring
	parent []int32 // innermost ring containing each ring, -1 for none
	shell  []int32 // the shell (first ring) of each ring's polygon

	// A depth-first numbering of the parent forest: ring a encloses ring
	// d exactly when tin[a] <= tin[d] and tout[d] <= tout[a].
	tin, tout   []int32
	child, sibl []int32 // first child and next sibling of each ring
	stack, kids []int32 // depth-first search: rings, and the next child of each

	// filter is the scale of the static orientation filter for the
	// rings' bounding box (staticFilter), or 0.
	filter float64

	verify       bool // check the status order after every insertion
	inconsistent int  // status order violations seen when verifying

	// passed is set when a check found a segment touching another ring's
	// segment at a point that is not an endpoint of both: only then can a
	// segment of the status pass through a vertex (see event). general
	// keeps it set, for tests that compare with the general path.
	passed  bool
	general bool
}

// vertex returns vertex k (mod n) of ring r, for 0 <= k < 2n.
func (s *sweeper) vertex(r int32, k int32) pt {
	ring := s.rings[r]
	if int(k) >= len(ring) {
		k -= int32(len(ring))
	}
	return ring[k]
}

// follows reports whether segment k of a ring of n segments is the one
// after segment j, without a division.
func follows(j, k, n int32) bool {
	return j+1 == k || (k == 0 && j == n-1)
}

// run sweeps the rings set up in s.rings and s.poly (each ring at least 3
// distinct vertices, no equal consecutive vertices) and returns the first
// fault, or nil. When it returns nil, s.parent holds for each ring the
// innermost ring enclosing it (-1 for none): rings then neither cross
// nor overlap, so enclosure is well defined.
func (s *sweeper) run() *sweepFault {
	n := 0
	for _, ring := range s.rings {
		n += len(ring)
	}
	evs := slices.Grow(s.evs[:0], n)[:n]
	xlo, xhi, ylo, yhi := s.build(n, evs)
	s.filter = staticFilter(xlo, xhi, ylo, yhi)
	s.evs = evs
	s.sortEventsIn(xlo, xhi)
	s.resetBlocks()
	s.ccw = slices.Grow(s.ccw[:0], len(s.rings))
	s.parent = slices.Grow(s.parent[:0], len(s.rings))
	for range s.rings {
		s.ccw = append(s.ccw, false) // found with the parent
		s.parent = append(s.parent, unknownParent)
	}
	s.mark = slices.Grow(s.mark[:0], len(s.rings))
	for range s.rings {
		s.mark = append(s.mark, 0)
	}
	s.evNum = 0
	s.passed = s.general
	// Union-find nodes: rings first, then one node per touch point per
	// polygon, created on demand.
	s.uf = slices.Grow(s.uf[:0], len(s.rings))
	for r := range s.rings {
		s.uf = append(s.uf, int32(r))
	}
	for e := 0; e < len(s.evs); {
		p := s.evs[e].p
		if !s.general && (e+1 == len(s.evs) || s.evs[e+1].p != p) {
			// A vertex alone at its point, the usual case: its two
			// segments are sorted into ending and starting here, not
			// in event.
			v, kind := s.evs[e].id(), s.evs[e].kind()
			e++
			w := v - 1
			if kind&evFirst != 0 {
				w = s.prevSeg(v)
			}
			vEnds, wEnds := kind&evUp == 0, kind&evPrevUp != 0
			// s.ends and s.starts are filled only for eventAt.
			switch {
			case vEnds != wEnds && !s.passed:
				ending, starting := v, w
				if wEnds {
					ending, starting = w, v
				}
				if f := s.passOn(ending, starting); f != nil {
					return f
				}
				continue
			case vEnds && wEnds:
				if !s.passed {
					if f, ok := s.endPair(v, w); ok {
						if f != nil {
							return f
						}
						continue
					}
				}
				s.ends, s.starts = append(s.ends[:0], v, w), s.starts[:0]
			case !vEnds && !wEnds:
				if !s.passed {
					if f, ok := s.startPair(p, v, w); ok {
						if f != nil {
							return f
						}
						continue
					}
				}
				s.ends, s.starts = s.ends[:0], append(s.starts[:0], v, w)
			case vEnds:
				s.ends, s.starts = append(s.ends[:0], v), append(s.starts[:0], w)
			default:
				s.ends, s.starts = append(s.ends[:0], w), append(s.starts[:0], v)
			}
			s.vbuf = append(s.vbuf[:0], v)
			if f := s.eventAt(p, s.vbuf); f != nil {
				return f
			}
			continue
		}
		s.vbuf = s.vbuf[:0]
		for ; e < len(s.evs) && s.evs[e].p == p; e++ {
			s.vbuf = append(s.vbuf, s.evs[e].id())
		}
		if len(s.vbuf) > 1 {
			// The sorts leave equal points in different orders: take
			// them by id, so that the fault found does not depend on
			// the sort.
			slices.Sort(s.vbuf)
		}
		if f := s.event(p, s.vbuf); f != nil {
			return f
		}
	}
	return nil
}

// event processes the vertices grp, all at p.
func (s *sweeper) event(p pt, grp []int32) *sweepFault {
	s.ends, s.starts = s.ends[:0], s.starts[:0]
	for _, v := range grp {
		for _, sg := range [2]int32{v, s.prevSeg(v)} {
			if s.segs[sg].b == p {
				s.ends = append(s.ends, sg)
			} else {
				s.starts = append(s.starts, sg)
			}
		}
	}
	return s.eventAt(p, grp)
}

// eventAt is event once s.ends and s.starts hold the segments of grp
// that end at p and that start there, in the order event puts them.
func (s *sweeper) eventAt(p pt, grp []int32) *sweepFault {
	var below, above int32
	switch len(s.ends) {
	case 1:
		if !s.passed {
			// No segment passes through p: a status segment passing
			// through a vertex where another ends is next to one ending
			// there (or to one crossing it, a fault found earlier), and
			// check sets s.passed on their touch, found when they
			// became neighbours.
			x := s.ends[0]
			s.onBuf, below, above = append(s.onBuf[:0], x), s.prev(x), s.next(x)
			break
		}
		s.onBuf, below, above = s.around(s.ends[0], p, s.onBuf[:0])
	case 2:
		s.onBuf, below, above = s.aroundPair(s.ends[0], s.ends[1], p, s.onBuf[:0])
	case 0:
		s.onBuf, below, above = s.locateHinted(p, s.onBuf[:0])
	default:
		s.onBuf, below, above = s.around(s.ends[0], p, s.onBuf[:0])
	}
	through := len(s.onBuf) > len(s.ends) // segments pass through p
	if len(grp) > 1 || through {
		if f := s.meet(p, grp); f != nil {
			return f
		}
	}
	// apart is a pair of consecutive segments of one ring, both starting
	// here, that meet only here: check would find nothing between them.
	apart := [2]int32{nilNode, nilNode}
	switch st := s.starts; {
	case len(st) == 2:
		// Both start at p, so cmpSeg is decided by one orientation (or,
		// when it is 0, by its tie-breaks).
		a, b := &s.segs[st[0]], &s.segs[st[1]]
		o := s.orient(b.a, b.b, a.b)
		if o > 0 || o == 0 && s.cmpSeg(st[0], st[1]) > 0 {
			st[0], st[1] = st[1], st[0]
		}
		if o != 0 && a.ring == b.ring {
			if n := int32(len(s.rings[a.ring])); follows(a.k, b.k, n) || follows(b.k, a.k, n) {
				apart = [2]int32{st[0], st[1]}
			}
		}
	case len(st) > 2:
		slices.SortFunc(st, s.cmpSeg)
	}
	if !through {
		// The segments ending here are exactly s.onBuf, contiguous in the
		// status between below and above, in order; those starting here
		// go between below and above too, in order. So each starting
		// segment takes an ending one's node, in place (a vertex where
		// the ring passes on costs no tree operation), and only the
		// surplus is inserted or removed.
		m := min(len(s.onBuf), len(s.starts))
		for i := range m {
			s.replace(s.onBuf[i], s.starts[i])
		}
		s.removeRun(s.onBuf[m:])
		after := below
		if m > 0 {
			after = s.starts[m-1]
		}
		s.insertRun(s.starts[m:], after)
	} else {
		for _, sg := range s.ends {
			s.remove(sg)
		}
		for _, sg := range s.starts {
			s.insertSearch(sg)
		}
	}
	// A ring first met here starts at its lexicographically smallest
	// vertex with two segments; the face just below the lower one is the
	// face just outside the ring, and the segment below that face says
	// which ring encloses it.
	for _, sg := range s.starts {
		if s.parent[s.segs[sg].ring] == unknownParent {
			s.findParent(sg)
		}
	}
	// Test every pair that became neighbours, from below to above.
	t := below
	if t == nilNode {
		if t = s.first(); t == nilNode {
			return nil
		}
	}
	for t != above && t != nilNode {
		u := s.next(t)
		if u == nilNode {
			break
		}
		if s.verify && s.cmpSeg(t, u) >= 0 {
			s.inconsistent++
		}
		if t != apart[0] || u != apart[1] {
			if f := s.check(t, u); f != nil {
				return f
			}
		}
		t = u
	}
	return nil
}

// findParent sets the parent of the ring of sg, the lower of the two
// segments starting at the ring's least vertex, just inserted.
func (s *sweeper) findParent(sg int32) {
	r := s.segs[sg].ring
	// The ring turns at its least vertex, which is convex, as it turns
	// everywhere.
	m := s.segs[sg].k
	if s.vertex(r, m) != s.segs[sg].a {
		m++
	}
	n := int32(len(s.rings[r]))
	s.ccw[r] = s.orient(s.vertex(r, m+n-1), s.vertex(r, m), s.vertex(r, m+1)) > 0
	t := s.prev(sg)
	switch {
	case t == nilNode:
		s.parent[r] = -1
	default:
		tr := s.segs[t].ring
		forward := s.vertex(tr, s.segs[t].k) == s.segs[t].a
		if forward == s.ccw[tr] { // tr's interior lies above t
			s.parent[r] = tr
		} else {
			s.parent[r] = s.parent[tr]
		}
	}
}
