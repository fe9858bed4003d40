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
// A block's segments occupy a window of its blockCap slots, which can
// open at either end: an insertion or removal shifts the segments on its
// shorter side. So segments that come and go at the ends of a run of the
// status, as a zigzag's spikes do, cost no shift at all.
//
// Bounds: a block splits only when full, into two halves, so at most
// 1 + 2n/blockCap blocks ever exist at once for n segments inserted, and
// their storage is at most 8 bytes per segment (plus one block).
//
// The block tree is in sweepavl.go, point location in sweeplocate.go.

// blockCap is the capacity of a status block, in segments: a power of
// two, so that masking an index with blockCap-1 keeps it in a block.
const blockCap = 64

var _ = [1]int{}[blockCap&(blockCap-1)] // blockCap is a power of two

// tnode is a status block: its AVL node (node i is block i), its place
// in the list of blocks, and the window of its slots that holds its
// segments (s.bitems[i*blockCap+off:][:n]).
type tnode struct {
	l, r, par  int32
	h          int32 // height: 1 for a leaf
	off        int32 // slot of the first segment held
	n          int32 // segments held
	next, prev int32 // neighbouring blocks in order
}

// slot is where an active segment is: its block and its slot there
// (consecutive segments of a block are in consecutive slots). A segment
// not in the status has block nilNode.
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
	if o := s.orient(b.a, b.b, a.a); o != 0 {
		return o
	}
	if o := s.orient(b.a, b.b, a.b); o != 0 {
		return o
	}
	return cmp.Compare(i, j)
}

// contains reports whether active segment i contains p: an active
// segment spans p in sweep order, so collinear means on it.
func (s *sweeper) contains(i int32, p pt) bool {
	sg := &s.segs[i]
	return sg.b == p || sg.a == p || s.orient(sg.a, sg.b, p) == 0
}

// below reports whether active segment i passes strictly below p.
func (s *sweeper) below(i int32, p pt) bool {
	sg := &s.segs[i]
	return s.orient(sg.a, sg.b, p) > 0
}

// active reports whether segment x is in the status.
func (s *sweeper) active(x int32) bool { return s.at[x].b != nilNode }

// items returns the segments of block b.
func (s *sweeper) items(b int32) []int32 {
	nd := &s.nodes[b]
	o := int(b)*blockCap + int(nd.off)
	return s.bitems[o : o+int(nd.n)]
}

// first returns the lowest segment of the status, or nilNode.
func (s *sweeper) first() int32 {
	if s.head == nilNode {
		return nilNode
	}
	return s.bitems[int(s.head)*blockCap+int(s.nodes[s.head].off)]
}

// next returns the segment just above active segment x, or nilNode.
func (s *sweeper) next(x int32) int32 {
	a := s.at[x]
	nd := &s.nodes[a.b]
	if a.i+1 < nd.off+nd.n {
		return s.bitems[int(a.b)*blockCap+int(a.i)+1]
	}
	nb := nd.next
	if nb == nilNode {
		return nilNode
	}
	return s.bitems[int(nb)*blockCap+int(s.nodes[nb].off)]
}

// prev returns the segment just below active segment x, or nilNode.
func (s *sweeper) prev(x int32) int32 {
	a := s.at[x]
	nd := &s.nodes[a.b]
	if a.i > nd.off {
		return s.bitems[int(a.b)*blockCap+int(a.i)-1]
	}
	pb := nd.prev
	if pb == nilNode {
		return nilNode
	}
	pn := &s.nodes[pb]
	return s.bitems[int(pb)*blockCap+int(pn.off+pn.n)-1]
}

// newBlock returns an empty block, not linked in, its window opening at
// slot off.
func (s *sweeper) newBlock(off int32) int32 {
	if k := len(s.bfree); k > 0 {
		b := s.bfree[k-1]
		s.bfree = s.bfree[:k-1]
		s.nodes[b].n, s.nodes[b].off = 0, off
		return b
	}
	b := int32(len(s.nodes))
	s.nodes = append(s.nodes, tnode{off: off})
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

// slotAfter returns the block and slot where a segment linked in right
// after active segment after (nilNode: first) goes, making the first
// block if there is none.
func (s *sweeper) slotAfter(after int32) (b, i int32) {
	if after != nilNode {
		a := s.at[after]
		return a.b, a.i + 1
	}
	if s.head == nilNode {
		s.linkBlock(s.newBlock(blockCap/2), nilNode)
	}
	return s.head, s.nodes[s.head].off
}

// split moves half of full block b (whose window is all its slots) to a
// new block next to it, the half that slot i, where a segment is to go,
// lies in, and returns where slot i is then. The moved half goes to the
// end of its new block away from i's nearer end, so that the insertion
// at i shifts nothing or little.
func (s *sweeper) split(b, i int32) (int32, int32) {
	const h = blockCap / 2
	lower := i < h
	from, li := int32(0), i // the moved half's first slot in b; i in it
	if !lower {
		from, li = h, i-h
	}
	to := int32(0) // the moved half's first slot in nb
	if li < h/2 {
		to = blockCap - h
	}
	nb := s.newBlock(to)
	if lower {
		s.nodes[b].off = h
		s.linkBlock(nb, s.nodes[b].prev)
	} else {
		s.linkBlock(nb, b)
	}
	o := int(b)*blockCap + int(from)
	moved := s.bitems[o : o+h]
	copy(s.bitems[int(nb)*blockCap+int(to):], moved)
	at := s.at
	for j, y := range moved {
		at[y] = slot{nb, to + int32(j)}
	}
	s.nodes[b].n, s.nodes[nb].n = blockCap-h, h
	if i == h {
		return b, h // just past b's lower half, now its window
	}
	return nb, to + li
}

// place puts xs at slot i of block b (from its window's first slot to
// just past its last), which has room for them: the segments on the
// shorter side of i make way.
func (s *sweeper) place(b, i int32, xs []int32) {
	k := int32(len(xs))
	nd := &s.nodes[b]
	n, off := nd.n, nd.off
	o := int(b) * blockCap
	it := (*[blockCap]int32)(s.bitems[o : o+blockCap])
	at := s.at
	left, right := i-off, off+n-i // segments below and above slot i
	// Between two segments of the block, the shorter side moves to the
	// neighbouring block, when it has room on that end, rather than
	// shift: the same moves, but then segments that keep coming in at
	// this place in the status go in at the block's end, with none.
	if left > 0 && right > 0 {
		if right <= left {
			if nb := nd.next; nb != nilNode && s.nodes[nb].off >= right {
				nn := &s.nodes[nb]
				no := int(nb) * blockCap
				nit := (*[blockCap]int32)(s.bitems[no : no+blockCap])
				d := nn.off - right - i // slot j of b goes to slot j+d of nb
				for j := i; j < off+n; j++ {
					y := it[j&(blockCap-1)]
					nit[(j+d)&(blockCap-1)] = y
					at[y] = slot{nb, j + d}
				}
				nn.off -= right
				nn.n += right
				n -= right
				right = 0
			}
		} else if pb := nd.prev; pb != nilNode && s.nodes[pb].off+s.nodes[pb].n+left <= blockCap {
			pn := &s.nodes[pb]
			po := int(pb) * blockCap
			pit := (*[blockCap]int32)(s.bitems[po : po+blockCap])
			d := pn.off + pn.n - off // slot j of b goes to slot j+d of pb
			for j := off; j < i; j++ {
				y := it[j&(blockCap-1)]
				pit[(j+d)&(blockCap-1)] = y
				at[y] = slot{pb, j + d}
			}
			pn.n += left
			n -= left
			off = i
			left = 0
		}
	}
	switch {
	case off >= k && (left <= right || off+n+k > blockCap):
		// Shift the segments below i down by k, one at a time (a block
		// is short: a call of copy costs more), updating their slots.
		// The masks, no-ops, spare the bounds checks.
		for j := off; j < i; j++ {
			y := it[j&(blockCap-1)]
			it[(j-k)&(blockCap-1)] = y
			at[y].i = j - k
		}
		i -= k
		nd.off = off - k
	case off+n+k <= blockCap:
		for j := off + n + k - 1; j >= i+k; j-- {
			y := it[(j-k)&(blockCap-1)]
			it[j&(blockCap-1)] = y
			at[y].i = j
		}
		nd.off = off
	default:
		// Room on neither side alone: centre the window anew.
		var tmp [blockCap]int32
		w := copy(tmp[:], it[off:i])
		w += copy(tmp[w:], xs)
		w += copy(tmp[w:], it[i:off+n])
		noff := int32(blockCap-w) / 2
		copy(it[noff:], tmp[:w])
		for j := int32(0); j < int32(w); j++ {
			at[it[noff+j]] = slot{b, noff + j}
		}
		nd.off, nd.n = noff, n+k
		return
	}
	for _, x := range xs {
		it[i&(blockCap-1)] = x
		at[x] = slot{b, i}
		i++
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

// unplace takes the k segments from slot a out of its block: the
// segments on the shorter side close the gap.
func (s *sweeper) unplace(a slot, k int32) {
	o := int(a.b) * blockCap
	nd := &s.nodes[a.b]
	n, off := nd.n, nd.off
	it := (*[blockCap]int32)(s.bitems[o : o+blockCap])
	at := s.at
	for j := a.i; j < a.i+k; j++ {
		at[it[j&(blockCap-1)]].b = nilNode
	}
	if n == k {
		s.unlinkBlock(a.b)
		return
	}
	nd.n = n - k
	if a.i-off <= off+n-(a.i+k) {
		for j := a.i - 1; j >= off; j-- {
			y := it[j&(blockCap-1)]
			it[(j+k)&(blockCap-1)] = y
			at[y].i = j + k
		}
		nd.off = off + k
		return
	}
	for j := a.i; j < off+n-k; j++ {
		y := it[(j+k)&(blockCap-1)]
		it[j&(blockCap-1)] = y
		at[y].i = j
	}
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
		if pred(s.bitems[int(t)*blockCap+int(s.nodes[t].off)]) {
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
