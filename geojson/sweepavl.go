package geojson

// This file holds the sweep status's block tree (see sweepstatus.go): an
// AVL tree, with parent links, over the status blocks, in order.

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

// avlInsertAfter links block x into the tree right after block after
// (nilNode: first).
func (s *sweeper) avlInsertAfter(x, after int32) {
	nd := &s.nodes[x]
	nd.l, nd.r, nd.par, nd.h = nilNode, nilNode, nilNode, 1
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

// avlRemove unlinks block x from the tree: its in-order successor takes
// its place when it has two children.
func (s *sweeper) avlRemove(x int32) {
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
