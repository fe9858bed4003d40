package geojson

import "cmp"

// This file holds the sweep status: the segments the sweep line crosses,
// in order, in an AVL tree with parent links.

// tnode is an AVL tree node; node i holds segment i.
type tnode struct {
	l, r, par int32
	h         int32 // height: 1 for a leaf
}

const nilNode = -1

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
	nodes := s.nodes
	for n != nilNode {
		nd := &nodes[n]
		l, r := nd.l, nd.r
		var hl, hr int32
		if l != nilNode {
			hl = nodes[l].h
		}
		if r != nilNode {
			hr = nodes[r].h
		}
		h := 1 + max(hl, hr)
		if bf := hl - hr; bf >= -1 && bf <= 1 {
			if h == nd.h {
				return // nothing above n changes
			}
			nd.h = h
			n = nd.par
			continue
		}
		nd.h = h
		switch bf := hl - hr; {
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
	s.nodes[x].h = 0
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

// replace puts node y in node x's place in the tree: x leaves the
// status and y takes its position in the order, with no rebalancing.
func (s *sweeper) replace(x, y int32) {
	n := s.nodes[x]
	s.nodes[y] = n
	switch {
	case n.par == nilNode:
		s.root = y
	case s.nodes[n.par].l == x:
		s.nodes[n.par].l = y
	default:
		s.nodes[n.par].r = y
	}
	if n.l != nilNode {
		s.nodes[n.l].par = y
	}
	if n.r != nilNode {
		s.nodes[n.r].par = y
	}
	s.nodes[x].h = 0
}

// active reports whether segment x is in the status.
func (s *sweeper) active(x int32) bool { return s.nodes[x].h > 0 }

// locateHinted is locate for an event where segments only start, tried
// first next to the ring's segments that continue those starting at p
// (a ring's segments are often close in the status: a zigzag's spikes
// start next to their neighbours): a hint costs two orientation tests, a
// descent one per level.
func (s *sweeper) locateHinted(p pt, out []int32) (on []int32, below, above int32) {
	for _, sg := range s.starts {
		r := s.segs[sg].ring
		n := int32(s.segOff[r+1] - s.segOff[r])
		k := s.segs[sg].k
		for _, h := range [2]int32{int32(s.segOff[r]) + (k+1)%n, int32(s.segOff[r]) + (k+n-1)%n} {
			if s.active(h) {
				if on, below, above, ok := s.locateNear(h, p, out); ok {
					return on, below, above
				}
			}
		}
	}
	return s.locate(p, out)
}

// locateNear finds what locate finds when active segment h is next to p:
// the last segment p lies strictly above, or the first it does not. It
// reports false when h is neither.
func (s *sweeper) locateNear(h int32, p pt, out []int32) (on []int32, below, above int32, ok bool) {
	var first int32
	if sg := &s.segs[h]; orient(sg.a, sg.b, p) > 0 {
		first = s.next(h)
		if first != nilNode {
			if f := &s.segs[first]; orient(f.a, f.b, p) > 0 {
				return out, nilNode, nilNode, false
			}
		}
		below = h
	} else {
		below = s.prev(h)
		if below != nilNode {
			if b := &s.segs[below]; orient(b.a, b.b, p) <= 0 {
				return out, nilNode, nilNode, false
			}
		}
		first = h
	}
	above = nilNode
	for t := first; t != nilNode; t = s.next(t) {
		if !s.contains(t, p) {
			above = t
			break
		}
		out = append(out, t)
	}
	return out, below, above, true
}
