package geojson

import (
	"cmp"
	"slices"
)

// This file holds the plane sweep that checks the rings of a Polygon or
// MultiPolygon for forbidden contacts in O(n log n) time for n segments
// (plus the number of ring-to-ring touch points, which is bounded by the
// number of rings on valid input): a Shamos–Hoey sweep over the
// lexicographically sorted vertices, with an AVL tree (with parent links)
// as the sweep status.
//
// Only segments that become neighbours in the status are tested for
// crossings and overlaps, which finds one if any exists (the leftmost
// forbidden contact is between neighbours just before the sweep reaches
// it). Touches, which are allowed between different rings, always happen
// at a vertex; they are found exactly at that vertex's event: by grouping
// equal vertices, and by collecting the status segments that pass through
// the vertex, which are contiguous in the status.
//
// At a vertex where a segment ends, its tree node is known, so the
// segments at the vertex and their neighbours are found by walking the
// tree locally; segments that start there are linked in next to their
// neighbour. Only a vertex where segments start and none ends needs a
// descent from the root. Every tree operation is O(log n) in the worst
// case.

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

// event is a ring vertex: its point and global id.
type event struct {
	p pt
	v int32
}

// tnode is an AVL tree node; node i holds segment i.
type tnode struct {
	l, r, par int32
	h         int32 // height: 1 for a leaf
}

const nilNode = -1

const unknownParent = -2

// sweeper holds reusable buffers for sweeps.
type sweeper struct {
	rings  [][]pt
	pts    []pt  // backing array of rings
	poly   []int // polygon of each ring
	segOff []int // first segment of each ring
	segs   []seg
	evs    []event // vertex events, sorted
	nodes  []tnode
	root   int32
	uf     []int32 // union-find over rings and touch points
	onBuf  []int32
	dirs   []dir
	labels []int32
	mark   []int32 // per ring: the last event that met it
	evNum  int32
	grp    []int32
	vbuf   []int32
	ends   []int32
	starts []int32
	count  []int // bucket sort buffers
	nextB  []int
	evs2   []event

	ccw    []bool  // orientation of each ring
	parent []int32 // innermost ring containing each ring, -1 for none
	shell  []int32 // the shell (first ring) of each ring's polygon

	// A depth-first numbering of the parent forest: ring a encloses ring
	// d exactly when tin[a] <= tin[d] and tout[d] <= tout[a].
	tin, tout   []int32
	child, sibl []int32 // first child and next sibling of each ring
	stack, kids []int32 // depth-first search: rings, and the next child of each

	verify       bool // check the status order after every insertion
	inconsistent int  // status order violations seen when verifying
}

// vertex returns vertex k (mod n) of ring r.
func (s *sweeper) vertex(r int32, k int32) pt {
	ring := s.rings[r]
	return ring[int(k)%len(ring)]
}

// cmpSeg orders two distinct active segments in the status: by the
// position of the later-starting one's first point relative to the other,
// then by slope, then by index.
func (s *sweeper) cmpSeg(i, j int32) int {
	if i == j {
		return 0
	}
	a, b := &s.segs[i], &s.segs[j]
	if less(a.a, b.a) {
		return -s.cmpSeg(j, i)
	}
	if o := orient(b.a, b.b, a.a); o != 0 {
		return o
	}
	if o := orient(b.a, b.b, a.b); o != 0 {
		return o
	}
	return cmp.Compare(i, j)
}

// contains reports whether active segment i contains p: an active
// segment spans p in sweep order, so collinear means on it.
func (s *sweeper) contains(i int32, p pt) bool {
	sg := &s.segs[i]
	return orient(sg.a, sg.b, p) == 0
}

func (s *sweeper) next(x int32) int32 {
	if r := s.nodes[x].r; r != nilNode {
		for s.nodes[r].l != nilNode {
			r = s.nodes[r].l
		}
		return r
	}
	for {
		p := s.nodes[x].par
		if p == nilNode || s.nodes[p].l == x {
			return p
		}
		x = p
	}
}

func (s *sweeper) prev(x int32) int32 {
	if l := s.nodes[x].l; l != nilNode {
		for s.nodes[l].r != nilNode {
			l = s.nodes[l].r
		}
		return l
	}
	for {
		p := s.nodes[x].par
		if p == nilNode || s.nodes[p].r == x {
			return p
		}
		x = p
	}
}

// replaceChild makes c take old's place under old's parent (or as root).
func (s *sweeper) replaceChild(old, c int32) {
	p := s.nodes[old].par
	switch {
	case p == nilNode:
		s.root = c
	case s.nodes[p].l == old:
		s.nodes[p].l = c
	default:
		s.nodes[p].r = c
	}
	if c != nilNode {
		s.nodes[c].par = p
	}
}

// rotateUp rotates x above its parent.
func (s *sweeper) rotateUp(x int32) {
	p := s.nodes[x].par
	s.replaceChild(p, x)
	if s.nodes[p].l == x {
		b := s.nodes[x].r
		s.nodes[p].l = b
		if b != nilNode {
			s.nodes[b].par = p
		}
		s.nodes[x].r = p
	} else {
		b := s.nodes[x].l
		s.nodes[p].r = b
		if b != nilNode {
			s.nodes[b].par = p
		}
		s.nodes[x].l = p
	}
	s.nodes[p].par = x
	s.fix(p)
	s.fix(x)
}

func (s *sweeper) height(n int32) int32 {
	if n == nilNode {
		return 0
	}
	return s.nodes[n].h
}

// fix recomputes the height of n from its children.
func (s *sweeper) fix(n int32) {
	s.nodes[n].h = 1 + max(s.height(s.nodes[n].l), s.height(s.nodes[n].r))
}

// rebalance restores the AVL invariant on the path from n to the root,
// after a node was linked in or out below n. The tree height stays
// below 1.45 log2(n+2), so every operation is O(log n) in the worst case.
func (s *sweeper) rebalance(n int32) {
	for n != nilNode {
		old := s.nodes[n].h
		s.fix(n)
		l, r := s.nodes[n].l, s.nodes[n].r
		switch bf := s.height(l) - s.height(r); {
		case bf >= -1 && bf <= 1 && s.nodes[n].h == old:
			return // nothing above n changes
		case bf > 1:
			if s.height(s.nodes[l].l) < s.height(s.nodes[l].r) {
				s.rotateUp(s.nodes[l].r)
			}
			n = s.nodes[n].l
			s.rotateUp(n)
		case bf < -1:
			if s.height(s.nodes[r].r) < s.height(s.nodes[r].l) {
				s.rotateUp(s.nodes[r].l)
			}
			n = s.nodes[n].r
			s.rotateUp(n)
		}
		n = s.nodes[n].par
	}
}

// insertAfter links x in right after node after (nilNode: first).
func (s *sweeper) insertAfter(x, after int32) {
	s.nodes[x] = tnode{l: nilNode, r: nilNode, par: nilNode, h: 1}
	switch {
	case s.root == nilNode:
		s.root = x
		return
	case after == nilNode:
		n := s.root
		for s.nodes[n].l != nilNode {
			n = s.nodes[n].l
		}
		s.nodes[n].l = x
		s.nodes[x].par = n
	case s.nodes[after].r == nilNode:
		s.nodes[after].r = x
		s.nodes[x].par = after
	default:
		n := s.nodes[after].r
		for s.nodes[n].l != nilNode {
			n = s.nodes[n].l
		}
		s.nodes[n].l = x
		s.nodes[x].par = n
	}
	s.rebalance(s.nodes[x].par)
}

// insertSearch inserts x at its place in the order, found by descent.
func (s *sweeper) insertSearch(x int32) {
	after := int32(nilNode)
	for t := s.root; t != nilNode; {
		if s.cmpSeg(x, t) < 0 {
			t = s.nodes[t].l
		} else {
			after = t
			t = s.nodes[t].r
		}
	}
	s.insertAfter(x, after)
}

// remove unlinks node x: its in-order successor takes its place when it
// has two children.
func (s *sweeper) remove(x int32) {
	l, r := s.nodes[x].l, s.nodes[x].r
	var start int32
	switch {
	case l == nilNode:
		start = s.nodes[x].par
		s.replaceChild(x, r)
	case r == nilNode:
		start = s.nodes[x].par
		s.replaceChild(x, l)
	default:
		y := r
		for s.nodes[y].l != nilNode {
			y = s.nodes[y].l
		}
		if s.nodes[y].par != x {
			start = s.nodes[y].par
			s.replaceChild(y, s.nodes[y].r)
			s.nodes[y].r = r
			s.nodes[r].par = y
		} else {
			start = y
		}
		s.replaceChild(x, y)
		s.nodes[y].l = l
		s.nodes[l].par = y
		s.nodes[y].h = s.nodes[x].h
	}
	s.rebalance(start)
}

// locate finds, by descent, the segments containing p (appended to out in
// order) and the nearest segments below and above p.
func (s *sweeper) locate(p pt, out []int32) (on []int32, below, above int32) {
	below, above = nilNode, nilNode
	first := int32(nilNode)
	for t := s.root; t != nilNode; {
		sg := &s.segs[t]
		if orient(sg.a, sg.b, p) > 0 {
			below = t
			t = s.nodes[t].r
		} else {
			first = t
			t = s.nodes[t].l
		}
	}
	for t := first; t != nilNode; t = s.next(t) {
		if !s.contains(t, p) {
			above = t
			break
		}
		out = append(out, t)
	}
	return out, below, above
}

// around collects the block of segments containing p around node x,
// which contains p, and the segments just below and above the block.
func (s *sweeper) around(x int32, p pt, out []int32) (on []int32, below, above int32) {
	lo := x
	for {
		q := s.prev(lo)
		if q == nilNode || !s.contains(q, p) {
			below = q
			break
		}
		lo = q
	}
	for t := lo; ; {
		out = append(out, t)
		t = s.next(t)
		if t == nilNode || !s.contains(t, p) {
			above = t
			break
		}
	}
	return out, below, above
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
	s.segs = slices.Grow(s.segs[:0], n)
	s.segOff = s.segOff[:0]
	for r, ring := range s.rings {
		s.segOff = append(s.segOff, len(s.segs))
		for k := range ring {
			a, b := ring[k], ring[(k+1)%len(ring)]
			if less(b, a) {
				a, b = b, a
			}
			s.segs = append(s.segs, seg{a: a, b: b, ring: int32(r), k: int32(k)})
		}
	}
	s.segOff = append(s.segOff, len(s.segs))
	// Vertex v of ring r has global id segOff[r]+v, like segment (r, v).
	s.evs = slices.Grow(s.evs[:0], len(s.segs))
	for r, ring := range s.rings {
		off := s.segOff[r]
		for k, v := range ring {
			s.evs = append(s.evs, event{v, int32(off + k)})
		}
	}
	s.sortEvents()
	s.nodes = slices.Grow(s.nodes[:0], len(s.segs))
	for range s.segs {
		s.nodes = append(s.nodes, tnode{l: nilNode, r: nilNode, par: nilNode, h: 1})
	}
	s.root = nilNode
	s.ccw = s.ccw[:0]
	s.parent = s.parent[:0]
	for _, ring := range s.rings {
		s.ccw = append(s.ccw, ringCCW(ring))
		s.parent = append(s.parent, unknownParent)
	}
	s.mark = slices.Grow(s.mark[:0], len(s.rings))
	for range s.rings {
		s.mark = append(s.mark, 0)
	}
	s.evNum = 0
	// Union-find nodes: rings first, then one node per touch point per
	// polygon, created on demand.
	s.uf = s.uf[:0]
	for r := range s.rings {
		s.uf = append(s.uf, int32(r))
	}
	for e := 0; e < len(s.evs); {
		p := s.evs[e].p
		s.vbuf = s.vbuf[:0]
		for ; e < len(s.evs) && s.evs[e].p == p; e++ {
			s.vbuf = append(s.vbuf, s.evs[e].v)
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
	var below, above int32
	if len(s.ends) > 0 {
		s.onBuf, below, above = s.around(s.ends[0], p, s.onBuf[:0])
	} else {
		s.onBuf, below, above = s.locate(p, s.onBuf[:0])
	}
	through := len(s.onBuf) > len(s.ends) // segments pass through p
	if len(grp) > 1 || through {
		if f := s.meet(p, grp); f != nil {
			return f
		}
	}
	for _, sg := range s.ends {
		s.remove(sg)
	}
	if len(s.starts) > 1 {
		slices.SortFunc(s.starts, s.cmpSeg)
	}
	if !through {
		after := below
		for _, sg := range s.starts {
			s.insertAfter(sg, after)
			after = sg
		}
	} else {
		for _, sg := range s.starts {
			s.insertSearch(sg)
		}
	}
	// A ring first met here starts at its lexicographically smallest
	// vertex with two segments; the face just below the lower one is the
	// face just outside the ring, and the segment below that face says
	// which ring encloses it.
	for _, sg := range s.starts {
		r := s.segs[sg].ring
		if s.parent[r] != unknownParent {
			continue
		}
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
	// Test every pair that became neighbours, from below to above.
	t := below
	if t == nilNode {
		if s.root == nilNode {
			return nil
		}
		t = s.root
		for s.nodes[t].l != nilNode {
			t = s.nodes[t].l
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
		if f := s.check(t, u); f != nil {
			return f
		}
		t = u
	}
	return nil
}

// meet checks the rings meeting at p: each ring may have one vertex
// there and no segment passing through; distinct rings touching are
// recorded for the interior connectivity check.
func (s *sweeper) meet(p pt, grp []int32) *sweepFault {
	s.evNum++
	s.grp = s.grp[:0]
	for _, v := range grp {
		ring := s.segs[v].ring
		if s.mark[ring] == s.evNum {
			return &sweepFault{rule: RuleRingSelfIntersection, ring: int(ring), k: int(s.segs[v].k), ring2: -1,
				msg: "the ring touches itself: this vertex repeats an earlier one"}
		}
		s.mark[ring] = s.evNum
		s.grp = append(s.grp, v)
	}
	for _, sg := range s.onBuf {
		q := &s.segs[sg]
		if q.a == p || q.b == p {
			continue
		}
		if s.mark[q.ring] == s.evNum {
			k := -1
			for _, w := range s.grp {
				if s.segs[w].ring == q.ring && s.vertex(q.ring, s.segs[w].k) == p {
					k = int(s.segs[w].k)
				}
			}
			return &sweepFault{rule: RuleRingSelfIntersection, ring: int(q.ring), k: k, ring2: -1,
				msg: "the ring touches itself: a vertex or segment lies on another of its segments"}
		}
		s.mark[q.ring] = s.evNum
		s.grp = append(s.grp, sg)
	}
	if len(s.grp) > 1 {
		if f := s.crossAt(p); f != nil {
			return f
		}
		return s.touch(p)
	}
	return nil
}

// crossAt reports rings of s.grp that cross (rather than touch) at p, or
// share a segment leaving p: their directions at p interleave or
// coincide.
func (s *sweeper) crossAt(p pt) *sweepFault {
	s.dirs = s.dirs[:0]
	for _, e := range s.grp {
		sg := &s.segs[e]
		var q1, q2 pt
		if s.vertex(sg.ring, sg.k) == p {
			n := int32(len(s.rings[sg.ring]))
			q1, q2 = s.vertex(sg.ring, sg.k+1), s.vertex(sg.ring, sg.k+n-1)
		} else {
			q1, q2 = sg.a, sg.b
		}
		s.dirs = append(s.dirs, dir{q1, sg.ring}, dir{q2, sg.ring})
	}
	return s.interleave(p, s.dirs)
}

// dir is a ring's edge leaving a point, given by its other endpoint.
type dir struct {
	q    pt
	ring int32
}

// interleave sorts dirs around p and reports two rings that cross at p
// or leave it along the same direction. Each ring has exactly two
// entries.
func (s *sweeper) interleave(p pt, dirs []dir) *sweepFault {
	half := func(q pt) int {
		if q.y > p.y || (q.y == p.y && q.x > p.x) {
			return 0
		}
		return 1
	}
	slices.SortFunc(dirs, func(a, b dir) int {
		if ha, hb := half(a.q), half(b.q); ha != hb {
			return ha - hb
		}
		return -orient(p, a.q, b.q)
	})
	n := len(dirs)
	for i := range n {
		a, b := dirs[i], dirs[(i+1)%n]
		if a.ring != b.ring && half(a.q) == half(b.q) && orient(p, a.q, b.q) == 0 {
			return s.ringsFault(p, a.ring, b.ring, cOverlap)
		}
	}
	// The rings touch without crossing exactly when their labels, read
	// around p, nest like parentheses. Reducing adjacent equal labels
	// leaves, on crossing, a sequence whose first two labels cross.
	stk := s.labels[:0]
	for _, d := range dirs {
		if len(stk) > 0 && stk[len(stk)-1] == d.ring {
			stk = stk[:len(stk)-1]
		} else {
			stk = append(stk, d.ring)
		}
	}
	s.labels = stk
	if len(stk) > 0 {
		return s.ringsFault(p, stk[0], stk[1], cCross)
	}
	return nil
}

// ringsFault is the fault of rings a and b crossing or overlapping at p.
func (s *sweeper) ringsFault(p pt, a, b int32, c contact) *sweepFault {
	if a > b {
		a, b = b, a
	}
	rule, msg := RuleRingIntersection, "two rings cross"
	if c == cOverlap {
		msg = "two rings share a segment"
	}
	if s.poly[a] != s.poly[b] {
		rule, msg = RuleMultiPolygonOverlap, "rings of two different polygons cross, so the polygons overlap"
		if c == cOverlap {
			msg = "two polygons share a segment (they may touch only at points)"
		}
	}
	f := &sweepFault{rule: rule, ring: int(b), k: -1, ring2: int(a), msg: msg}
	for _, e := range s.grp { // point at b's vertex at p, if it has one
		if sg := &s.segs[e]; sg.ring == b && s.vertex(b, sg.k) == p {
			f.k = int(sg.k)
		}
	}
	return f
}

// prevSeg returns the segment ending at vertex v (the one before it).
func (s *sweeper) prevSeg(v int32) int32 {
	r := s.segs[v].ring
	if int(v) == s.segOff[r] {
		return int32(s.segOff[r+1] - 1)
	}
	return v - 1
}

// touch records that the rings in s.grp (vertices or segments, all of
// different rings) meet at p, and reports a disconnected interior when
// the touches of one polygon's rings form a cycle.
func (s *sweeper) touch(p pt) *sweepFault {
	slices.SortFunc(s.grp, func(a, b int32) int { return cmp.Compare(s.poly[s.segs[a].ring], s.poly[s.segs[b].ring]) })
	for i := 0; i < len(s.grp); {
		j := i + 1
		pa := s.poly[s.segs[s.grp[i]].ring]
		for j < len(s.grp) && s.poly[s.segs[s.grp[j]].ring] == pa {
			j++
		}
		if j-i > 1 {
			node := int32(len(s.uf))
			s.uf = append(s.uf, node)
			for _, b := range s.grp[i:j] {
				if !s.union(s.segs[b].ring, node) {
					continue
				}
				// Point at a vertex lying at p, preferring b's ring.
				at := b
				for _, c := range s.grp[i:j] {
					if s.vertex(s.segs[at].ring, s.segs[at].k) != p {
						at = c
					}
				}
				k := int(s.segs[at].k)
				if s.vertex(s.segs[at].ring, s.segs[at].k) != p {
					k = -1
				}
				return &sweepFault{rule: RuleInteriorDisconnected, ring: int(s.segs[at].ring), k: k, ring2: int(s.segs[s.grp[i]].ring),
					msg: "the rings touch at " + fmtPos([]float64{p.x, p.y}) + " and elsewhere, which disconnects the polygon interior"}
			}
		}
		i = j
	}
	return nil
}

// check tests neighbouring segments i and j for a forbidden contact.
func (s *sweeper) check(i, j int32) *sweepFault {
	if i == nilNode || j == nilNode {
		return nil
	}
	a, b := &s.segs[i], &s.segs[j]
	c, _ := intersect(a.a, a.b, b.a, b.b)
	if c == cNone {
		return nil
	}
	if a.ring == b.ring {
		n := int32(len(s.rings[a.ring]))
		adjacent := (a.k+1)%n == b.k || (b.k+1)%n == a.k
		if c == cTouch && adjacent {
			return nil
		}
		k := max(a.k, b.k)
		msg := "the ring crosses itself"
		switch {
		case c == cOverlap:
			msg = "the ring retraces part of itself"
		case c == cTouch:
			msg = "the ring touches itself"
		}
		return &sweepFault{rule: RuleRingSelfIntersection, ring: int(a.ring), k: int(k), ring2: -1, msg: msg}
	}
	if c == cTouch {
		return nil
	}
	rule, msg := RuleRingIntersection, "two rings cross"
	if c == cOverlap {
		msg = "two rings share a segment"
	}
	if s.poly[a.ring] != s.poly[b.ring] {
		rule, msg = RuleMultiPolygonOverlap, "rings of two different polygons cross, so the polygons overlap"
		if c == cOverlap {
			msg = "two polygons share a segment (they may touch only at points)"
		}
	}
	r, k := b.ring, b.k
	if a.ring > b.ring {
		r, k = a.ring, a.k
	}
	return &sweepFault{rule: rule, ring: int(r), k: int(k), ring2: int(min(a.ring, b.ring)), msg: msg}
}

func (s *sweeper) find(x int32) int32 {
	for s.uf[x] != x {
		s.uf[x] = s.uf[s.uf[x]]
		x = s.uf[x]
	}
	return x
}

// union joins a and b and reports whether they were already joined.
func (s *sweeper) union(a, b int32) bool {
	a, b = s.find(a), s.find(b)
	if a == b {
		return true
	}
	s.uf[a] = b
	return false
}

// sortEventsCmp sorts events by point, x then y.
func sortEventsCmp(evs []event) {
	slices.SortFunc(evs, func(e, f event) int {
		if c := cmp.Compare(e.p.x, f.p.x); c != 0 {
			return c
		}
		return cmp.Compare(e.p.y, f.p.y)
	})
}
