package memstore

// slotHeap is a min-heap of slots by their entries' deadlines (or, for
// the heap of records by age, their completion times) that keeps each
// entry's pos (agePos) current, so fix and remove work in O(log n). It
// holds int32s, not pointers: nothing in it for the collector to scan.
type slotHeap struct {
	s     *Store
	slots []int32
	age   bool // ordered by entry.done, positions in entry.agePos
}

func (h *slotHeap) less(i, j int) bool {
	a, b := h.s.entry(h.slots[i]), h.s.entry(h.slots[j])
	if h.age {
		return a.done < b.done
	}
	return a.deadline < b.deadline
}

// setPos records that the entry in slot is at position i.
func (h *slotHeap) setPos(slot int32, i int) {
	if h.age {
		h.s.entry(slot).agePos = int32(i)
	} else {
		h.s.entry(slot).pos = int32(i)
	}
}

// top returns the entry at the top of the heap, nil when it is empty.
func (h *slotHeap) top() *entry {
	if len(h.slots) == 0 {
		return nil
	}
	return h.s.entry(h.slots[0])
}

func (h *slotHeap) swap(i, j int) {
	h.slots[i], h.slots[j] = h.slots[j], h.slots[i]
	h.setPos(h.slots[i], i)
	h.setPos(h.slots[j], j)
}

func (h *slotHeap) push(slot int32) {
	h.slots = append(h.slots, slot)
	i := len(h.slots) - 1
	h.setPos(slot, i)
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
