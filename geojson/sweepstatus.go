package geojson

import (
	"cmp"
	"slices"
)

// This file holds the sweep status: the segments the sweep line crosses,
// in order. They are kept in blocks of at most blockCap segments, in
// order within each block; the blocks are linked in order, and ordered
// again by an AVL tree (with parent links) for the searches that start
// from nothing (a descent over the blocks, then a binary search in one).
//
// Most of the sweep's work is local: a segment's neighbours, a segment
// taking another's place, one linked in next to a known neighbour or
// unlinked. Each such step costs O(1), or a shift within one block,
// O(blockCap), over contiguous memory; the tree changes only when a full
// block splits or an empty one leaves, which is O(log n) in the worst
// case, like a descent.
//
// Bounds: a block splits only when full, into two halves, so at most
// 1 + 2n/blockCap blocks ever exist at once for n segments inserted, and
// their storage is at most 8 bytes per segment (plus one block).
//
// The block tree is in sweepavl.go, point location in sweeplocate.go.

// blockCap is the capacity of a status block, in segments: a power of
// two, so that masking an index with blockCap-1 keeps it in a block.
const blockCap = 32

var _ = [1]int{}[blockCap&(blockCap-1)] // blockCap is a power of two

// tnode is a status block: its AVL node (node i is block i), its place
// in the list of blocks, and how many segments it holds (at
// s.bitems[i*blockCap:]).
type tnode struct {
	l, r, par  int32
	h          int32 // height: 1 for a leaf
	n          int32 // segments held
	next, prev int32 // neighbouring blocks in order
}

// slot is where an active segment is: its block and its index there. A
// segment not in the status has block nilNode.
type slot struct{ b, i int32 }

const nilNode = -1

// resetStatus empties the status for nseg segments.
func (s *sweeper) resetStatus(nseg int) {
	s.at = slices.Grow(s.at[:0], nseg)[:nseg]
	for i := range s.at {
		s.at[i] = slot{nilNode, 0}
	}
	s.resetBlocks()
}

// resetBlocks empties the status blocks.
func (s *sweeper) resetBlocks() {
	s.nodes, s.bitems, s.bfree = s.nodes[:0], s.bitems[:0], s.bfree[:0]
	s.root, s.head = nilNode, nilNode
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
	return sg.b == p || sg.a == p || orient(sg.a, sg.b, p) == 0
}

// below reports whether active segment i passes strictly below p.
func (s *sweeper) below(i int32, p pt) bool {
	sg := &s.segs[i]
	return orient(sg.a, sg.b, p) > 0
}

// active reports whether segment x is in the status.
func (s *sweeper) active(x int32) bool { return s.at[x].b != nilNode }

// items returns the segments of block b.
func (s *sweeper) items(b int32) []int32 {
	o := int(b) * blockCap
	return s.bitems[o : o+int(s.nodes[b].n)]
}

// first returns the lowest segment of the status, or nilNode.
func (s *sweeper) first() int32 {
	if s.head == nilNode {
		return nilNode
	}
	return s.bitems[int(s.head)*blockCap]
}

// next returns the segment just above active segment x, or nilNode.
func (s *sweeper) next(x int32) int32 {
	a := s.at[x]
	nd := &s.nodes[a.b]
	if a.i+1 < nd.n {
		return s.bitems[int(a.b)*blockCap+int(a.i)+1]
	}
	if nd.next == nilNode {
		return nilNode
	}
	return s.bitems[int(nd.next)*blockCap]
}

// prev returns the segment just below active segment x, or nilNode.
func (s *sweeper) prev(x int32) int32 {
	a := s.at[x]
	if a.i > 0 {
		return s.bitems[int(a.b)*blockCap+int(a.i)-1]
	}
	pb := s.nodes[a.b].prev
	if pb == nilNode {
		return nilNode
	}
	return s.bitems[int(pb)*blockCap+int(s.nodes[pb].n)-1]
}

// newBlock returns an empty block, not linked in.
func (s *sweeper) newBlock() int32 {
	if k := len(s.bfree); k > 0 {
		b := s.bfree[k-1]
		s.bfree = s.bfree[:k-1]
		s.nodes[b].n = 0
		return b
	}
	b := int32(len(s.nodes))
	s.nodes = append(s.nodes, tnode{})
	n := len(s.bitems)
	s.bitems = slices.Grow(s.bitems, blockCap)[:n+blockCap]
	return b
}

// linkBlock links block b in right after block after (nilNode: first).
func (s *sweeper) linkBlock(b, after int32) {
	nxt := s.head
	if after != nilNode {
		nxt = s.nodes[after].next
		s.nodes[after].next = b
	} else {
		s.head = b
	}
	if nxt != nilNode {
		s.nodes[nxt].prev = b
	}
	s.nodes[b].prev, s.nodes[b].next = after, nxt
	s.avlInsertAfter(b, after)
}

// unlinkBlock unlinks block b and frees it.
func (s *sweeper) unlinkBlock(b int32) {
	p, n := s.nodes[b].prev, s.nodes[b].next
	if p != nilNode {
		s.nodes[p].next = n
	} else {
		s.head = n
	}
	if n != nilNode {
		s.nodes[n].prev = p
	}
	s.avlRemove(b)
	s.bfree = append(s.bfree, b)
}

// insertAfter links segment x in right after active segment after
// (nilNode: first).
func (s *sweeper) insertAfter(x, after int32) {
	b, i := s.slotAfter(after)
	if s.nodes[b].n == blockCap {
		b, i = s.split(b, i)
	}
	s.place(b, i, []int32{x})
}

// insertRun links segments xs, in order, in right after active segment
// after (nilNode: first): the segments starting at a vertex, in one
// shift of one block (unless it is too full).
func (s *sweeper) insertRun(xs []int32, after int32) {
	if len(xs) == 0 {
		return
	}
	b, i := s.slotAfter(after)
	if int(s.nodes[b].n)+len(xs) > blockCap {
		for _, x := range xs {
			s.insertAfter(x, after)
			after = x
		}
		return
	}
	s.place(b, i, xs)
}

// slotAfter returns the block and index where a segment linked in right
// after active segment after (nilNode: first) goes, making the first
// block if there is none.
func (s *sweeper) slotAfter(after int32) (b, i int32) {
	if after != nilNode {
		a := s.at[after]
		return a.b, a.i + 1
	}
	if s.head == nilNode {
		s.linkBlock(s.newBlock(), nilNode)
	}
	return s.head, 0
}

// split moves the upper half of full block b to a new block after it,
// and returns where index i of b is then.
func (s *sweeper) split(b, i int32) (int32, int32) {
	nb := s.newBlock()
	const h = blockCap / 2
	o := int(b) * blockCap
	moved := s.bitems[o+h : o+blockCap]
	copy(s.bitems[int(nb)*blockCap:], moved)
	at := s.at
	for j, y := range moved {
		at[y] = slot{nb, int32(j)}
	}
	s.nodes[b].n, s.nodes[nb].n = h, blockCap-h
	s.linkBlock(nb, b)
	if i > h {
		return nb, i - h
	}
	return b, i
}

// place puts xs at index i of block b, which has room for them.
func (s *sweeper) place(b, i int32, xs []int32) {
	k := int32(len(xs))
	nd := &s.nodes[b]
	n := nd.n
	o := int(b) * blockCap
	it := (*[blockCap]int32)(s.bitems[o : o+blockCap])
	at := s.at
	// Shift the segments from i up by k, one at a time (a block is
	// short: a call of copy costs more), updating their slots. The
	// masks, no-ops, spare the bounds checks.
	for j := n + k - 1; j >= i+k; j-- {
		y := it[(j-k)&(blockCap-1)]
		it[j&(blockCap-1)] = y
		at[y].i = j
	}
	for j, x := range xs {
		it[int(i)+j] = x
		at[x] = slot{b, i + int32(j)}
	}
	nd.n = n + k
}

// remove unlinks active segment x.
func (s *sweeper) remove(x int32) {
	s.unplace(s.at[x], 1)
}

// removeRun unlinks active segments xs, which are consecutive in the
// status, in order: the segments ending at a vertex, in one shift when
// they share a block.
func (s *sweeper) removeRun(xs []int32) {
	if len(xs) == 0 {
		return
	}
	a := s.at[xs[0]]
	if s.at[xs[len(xs)-1]].b != a.b {
		for _, x := range xs {
			s.remove(x)
		}
		return
	}
	s.unplace(a, int32(len(xs)))
}

// unplace takes the k segments from slot a out of its block.
func (s *sweeper) unplace(a slot, k int32) {
	o := int(a.b) * blockCap
	n := s.nodes[a.b].n
	it := (*[blockCap]int32)(s.bitems[o : o+blockCap])
	at := s.at
	for j := a.i; j < a.i+k; j++ {
		at[it[j&(blockCap-1)]].b = nilNode
	}
	if n == k {
		s.unlinkBlock(a.b)
		return
	}
	for j := a.i; j < n-k; j++ {
		y := it[(j+k)&(blockCap-1)]
		it[j&(blockCap-1)] = y
		at[y].i = j
	}
	s.nodes[a.b].n = n - k
}

// replace puts segment y in active segment x's place: x leaves the
// status and y takes its position in the order.
func (s *sweeper) replace(x, y int32) {
	a := s.at[x]
	s.at[y] = a
	s.at[x].b = nilNode
	s.bitems[int(a.b)*blockCap+int(a.i)] = y
}

// lastBlock returns the last block whose first segment satisfies pred,
// which holds for a prefix of the status, or nilNode.
func (s *sweeper) lastBlock(pred func(int32) bool) int32 {
	cand := int32(nilNode)
	for t := s.root; t != nilNode; {
		if pred(s.bitems[int(t)*blockCap]) {
			cand = t
			t = s.nodes[t].r
		} else {
			t = s.nodes[t].l
		}
	}
	return cand
}

// lastIn returns the last segment of block b, whose first segment
// satisfies pred, that satisfies pred, which holds for a prefix.
func lastIn(it []int32, pred func(int32) bool) int32 {
	lo, hi := 1, len(it) // it[:lo] satisfy pred, it[hi:] do not
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if pred(it[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return it[lo-1]
}

// insertSearch inserts x at its place in the order, found by descent.
func (s *sweeper) insertSearch(x int32) {
	notBefore := func(t int32) bool { return s.cmpSeg(x, t) >= 0 }
	after := int32(nilNode)
	if b := s.lastBlock(notBefore); b != nilNode {
		after = lastIn(s.items(b), notBefore)
	}
	s.insertAfter(x, after)
}
