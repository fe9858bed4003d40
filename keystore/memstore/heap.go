package memstore

// slotHeap is a min-heap of slots by their entries' deadlines that keeps
// each entry's pos current, so fix and remove work in O(log n). It holds
// int32s, not pointers: nothing in it for the collector to scan.
type slotHeap struct {
	s     *Store
	slots []int32
}

func (h *slotHeap) less(i, j int) bool {
	return h.s.entry(h.slots[i]).deadline < h.s.entry(h.slots[j]).deadline
}

func (h *slotHeap) swap(i, j int) {
	h.slots[i], h.slots[j] = h.slots[j], h.slots[i]
	h.s.entry(h.slots[i]).pos = int32(i)
	h.s.entry(h.slots[j]).pos = int32(j)
}

func (h *slotHeap) push(slot int32) {
	h.slots = append(h.slots, slot)
	i := len(h.slots) - 1
	h.s.entry(slot).pos = int32(i)
	h.up(i)
}

func (h *slotHeap) remove(pos int32) {
	i, last := int(pos), len(h.slots)-1
	if i != last {
		h.swap(i, last)
	}
	h.slots = h.slots[:last]
	if i != last {
		h.fixAt(i)
	}
}

func (h *slotHeap) fix(pos int32) { h.fixAt(int(pos)) }

func (h *slotHeap) fixAt(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *slotHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

// down sifts i down and reports whether it moved.
func (h *slotHeap) down(i0 int) bool {
	i, n := i0, len(h.slots)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
